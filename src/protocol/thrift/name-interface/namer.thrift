// prx's statement of the resolver's thrift name interface (`io.prx.thriftNameInterpreter`).
//
// The names, field ids and types are those namerd's clients and servers use on the wire (its
// `namer.thrift`), so either side interoperates with them; the comments are prx's. Calls travel
// over ThriftMux (a mux Tdispatch carrying a binary-protocol thrift message); a plain framed
// binary client is served too (Finagle's downgrade).

typedef list<binary> Path   // a path's segments, each as bytes
typedef string Ns           // a dtab namespace
typedef binary Stamp        // opaque version of one observation; empty: "give me the current value"
typedef string Dtab         // dtab text
typedef i32 BoundNodeId
typedef i32 DelegateNodeId

struct Void {}

// A name in a namespace, and the version of it the caller already has.
struct NameRef {
  1: Stamp stamp
  2: Path name
  3: Ns ns
}

// bind: the name tree `name` delegates to through the namespace's dtab followed by `dtab`.
struct BindReq {
  1: Dtab dtab
  2: NameRef name
  3: Path clientId
}

struct BoundName {
  1: Path id
  2: Path residual
}

struct WeightedNodeId {
  1: double weight
  2: BoundNodeId id
}

union BoundNode {
  1: Void neg
  2: Void empty
  3: Void fail
  4: BoundName leaf
  5: list<BoundNodeId> alt
  6: list<WeightedNodeId> weighted
}

// A tree flattened into a root and a table of the nodes its alt and weighted nodes point to.
struct BoundTree {
  1: BoundNode root
  2: map<BoundNodeId, BoundNode> nodes
}

struct Bound {
  1: Stamp stamp
  2: BoundTree tree
  3: Ns ns
}

exception BindFailure {
  1: string reason
  2: i32 retryInSeconds
  3: NameRef name
  4: Ns ns
}

// addr: the addresses of a bound id.
struct AddrReq {
  1: NameRef name
  2: Path clientId
}

struct AddrMeta {
  1: optional string authority
  2: optional string nodeName
  3: optional double endpoint_addr_weight
}

struct TransportAddress {
  1: binary ip     // 4 bytes (IPv4) or 16 (IPv6)
  2: i32 port
  3: optional AddrMeta meta
}

struct BoundAddr {
  1: set<TransportAddress> addresses
  2: optional AddrMeta meta
}

union AddrVal {
  1: BoundAddr bound
  2: Void neg
}

struct Addr {
  1: Stamp stamp
  2: AddrVal value
}

exception AddrFailure {
  1: string reason
  2: i32 retryInSeconds
  3: NameRef name
}

// delegate: how a path delegates, step by step (answered at once; not a long poll).
struct Transformation {
  1: BoundName value
  2: DelegateNodeId tree
}

union DelegateContents {
  1: string error
  2: Void empty
  3: Void fail
  4: Void neg
  5: DelegateNodeId delegate
  6: BoundName boundLeaf
  7: Path pathLeaf
  8: list<DelegateNodeId> alt
  9: list<WeightedNodeId> weighted
  10: Transformation transformation
}

struct DelegateNode {
  1: Path path
  2: string dentry
  3: DelegateContents contents
}

struct DelegateTree {
  1: DelegateNode root
  2: map<DelegateNodeId, DelegateNode> nodes
}

struct Delegation {
  1: Stamp stamp
  2: DelegateTree tree
  3: Ns ns
}

struct DelegateReq {
  1: Dtab dtab
  2: Delegation delegation
  3: Path clientId
}

exception DelegationFailure {
  1: string reason
}

// dtab: a namespace's stored dtab.
struct DtabReq {
  1: Stamp stamp
  2: Ns ns
  3: Path clientId
}

struct DtabRef {
  1: Stamp stamp
  2: Dtab dtab
}

exception DtabFailure {
  1: string reason
}

// Every call but delegate is a long poll: a request whose stamp is the current one is answered
// when the value next changes; any other stamp (or none) is answered at once.
service Namer {
  Bound bind(1: BindReq req) throws (1: BindFailure rf)
  Addr addr(1: AddrReq req) throws (1: AddrFailure af)
  Delegation delegate(1: DelegateReq req) throws (1: DelegationFailure df)
  DtabRef dtab(1: DtabReq req) throws (1: DtabFailure df)
}
