header hh_t { bit<8> f; }
