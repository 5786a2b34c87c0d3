#include "included.p4"
#define WIDTH 16
struct s_t { bit<WIDTH> a; }
#ifdef EXTRA
struct extra_t { bit<8> b; }
#endif
const bit<8> x = ;
