/*
 * v1model.p4 -- the v1model architecture (BMv2 simple_switch), as seen by
 * the kvfabric softswitch.
 *
 * Written for kvfabric from the documented v1model API.  The declarations
 * (extern names, method signatures, type parameters, enum members and their
 * order, standard_metadata_t fields, the V1Switch package) match the
 * v1model.p4 that p4c ships, because programs and P4Info ids depend on them.
 *
 * A program may choose the API revision by defining V1MODEL_VERSION before
 * including this file.  From 20200408 on, port numbers have the type
 * PortId_t and counters, meters and registers take their index type as a
 * type parameter.
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    /// low <= key field <= high
    range,
    /// either an exact match or a wildcard
    optional,
    /// the fields that choose a member of an action selector group
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9>  PortId_t;
#endif

/// Per-packet metadata of the architecture.  simple_switch maps the
/// @alias'ed fields onto its own intrinsic and queueing metadata.
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t    ingress_port;
    PortId_t    egress_spec;
    PortId_t    egress_port;
#else
    bit<9>      ingress_port;
    /// the port chosen by ingress; 511 means drop
    bit<9>      egress_spec;
    /// the port this copy leaves by (egress only)
    bit<9>      egress_port;
#endif
    /// what kind of packet this is: normal, clone, recirculated, ...
    bit<32>     instance_type;
    /// length of the packet in bytes, as received
    bit<32>     packet_length;
    /// when the packet entered the egress queue (microseconds)
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    /// queue depth seen on enqueue
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    /// time spent queued (microseconds)
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    /// queue depth seen on dequeue
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    /// when ingress processing started (microseconds)
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    /// when egress processing started (microseconds)
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    /// multicast group to replicate to; 0 means none
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;
    /// replication id of a multicast copy
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;
    /// set to 1 when a verify_checksum call found a bad checksum
    bit<1>  checksum_error;
    /// the error the parser ended with
    error   parser_error;
    /// priority of the packet in its egress queue
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/// An array of counters indexed by the program.
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
    /// Add this packet to counter index; an index >= size counts nothing.
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/// One counter per entry of the table that names it in `counters = ...`.
extern direct_counter {
    direct_counter(CounterType type);
    /// Optional: the counter of the matched entry is updated anyway.
    void count();
}

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/// An array of two-rate three-colour meters indexed by the program.
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
    /// Run meter index on this packet and write the colour (0 green,
    /// 1 yellow, 2 red) to result, whose type is bit<W> with W >= 2.
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/// One meter per entry of the table that names it in `meters = ...`.
extern direct_meter<T> {
    direct_meter(MeterType type);
    /// The colour the matched entry's meter gave this packet.
    void read(out T result);
}

/// An array of values that persists from packet to packet.
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
    /// result = element index (unspecified when index >= size).
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
    /// element index = value (nothing happens when index >= size).
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
}

/// A table implementation whose actions are members shared by entries.
extern action_profile {
    action_profile(bit<32> size);
}

/// result = a random value in [lo, hi]; T is bit<W>.
extern void random<T>(out T result, in T lo, in T hi);

/// Send data to the control plane; a named struct T names the digest.
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/// Set egress_spec to the drop port and mcast_grp to 0.  Later code may
/// still change either field and so undo the drop.
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/// result = base + (H(data) % max) when max >= 1, else base.
/// O, T and M are bit<W>; D is a tuple or struct of bit, int and varbit.
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/// A table implementation that picks a member of a group by hashing the
/// table's selector key fields.
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/// In VerifyChecksum: when condition holds and the checksum of data (with
/// algo) differs from checksum, set standard_metadata.checksum_error.
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/// In ComputeChecksum: when condition holds, checksum = algo(data).
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/// verify_checksum over data followed by the bytes the parser left unparsed.
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/// update_checksum over data followed by the bytes the parser left unparsed.
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/// Make a copy of the packet for clone session `session`: at the end of
/// ingress (I2E) or of egress (E2E).
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/// At the end of ingress, run ingress again on the original packet, keeping
/// the user metadata fields annotated @field_list(index).
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/// At the end of egress, send the deparsed packet back to the parser,
/// keeping the user metadata fields annotated @field_list(index).
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/// clone(), keeping the user metadata fields annotated @field_list(index).
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/// Cut the outgoing packet to at most length bytes.
extern void truncate(in bit<32> length);

/// Stop with an error when check is false (a debugging aid of BMv2).
extern void assert(in bool check);

/// Like assert for a running switch; a verifier may take check as given.
extern void assume(in bool check);

/// Write msg to the log; "{}" in msg is replaced by the fields of data.
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

// The architecture.  H is a struct of headers, header stacks and unions;
// M is a struct of user metadata.

parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

/// Only verify_checksum calls, blocks and returns belong here.
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);
@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);
@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

/// Only update_checksum calls, blocks and returns belong here.
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

/// Only packet_out.emit calls belong here.
@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif  /* _V1_MODEL_P4_ */
