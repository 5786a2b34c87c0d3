/*
 * core.p4 -- the P4_16 core library, as seen by the kvfabric softswitch.
 *
 * Written for kvfabric from the core-library appendix of the P4_16
 * language specification.  The declarations (names, signatures, type
 * parameters, member order) match the core.p4 that p4c ships, because
 * programs and control-plane identifiers depend on them.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/// Error codes every target knows.  A program may declare more of its own.
error {
    NoError,           /// nothing went wrong
    PacketTooShort,    /// extract() ran out of packet bits
    NoMatch,           /// no case of a select() matched
    StackOutOfBounds,  /// a header stack index was outside the stack
    HeaderTooShort,    /// a varbit extract asked for more bits than the field holds
    ParserTimeout,     /// the parser ran longer than the target allows
    ParserInvalidArgument /// a parser operation got an argument it cannot use
}

/// The packet being parsed, with a cursor that only moves forward.
extern packet_in {
    /// Copy the next sizeof(T) bits into hdr, make it valid and move on.
    /// T is a fixed-size header.
    void extract<T>(out T hdr);
    /// The same for a header whose single varbit field takes
    /// variableFieldSizeInBits bits of the packet.
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /// The next sizeof(T) bits, leaving the cursor where it is.
    T lookahead<T>();
    /// Move the cursor forward by sizeInBits bits.
    void advance(in bit<32> sizeInBits);
    /// The length of the whole packet in bytes (not available everywhere).
    bit<32> length();
}

/// The packet being assembled by a deparser.
extern packet_out {
    /// Append hdr if it is a valid header; stacks, unions and structs
    /// are emitted member by member, in order.
    void emit<T>(in T hdr);
}

/// In a parser: when check is false, record toSignal as the parser error
/// and go to the reject state.
extern void verify(in bool check, in error toSignal);

/// The action that does nothing.  Like p4c's core.p4 it carries no
/// annotation that P4Info shows: only @noWarn, which P4Info omits.
@noWarn("unused")
action NoAction() {}

/// The match kinds every target offers for table keys.
match_kind {
    /// the key field equals the entry value
    exact,
    /// the bits selected by a mask are equal
    ternary,
    /// longest prefix wins
    lpm
}

/// Stops compilation with message when check is a compile-time false.
/// Returns a bool so that it can initialise a constant.
extern bool static_assert(bool check, string message);

/// static_assert with a default message.
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
