// The proxy's built-in plugin modules. Each registers its kinds with the config registry when
// imported, so `bin/prx` imports this list before it loads a config (validation looks kinds up by
// name). Modules that also pull in others are still listed, so this file says what the proxy has.
// Resolver storage and interface kinds are `prx-resolver`'s (src/resolver/builtins.ts): no proxy
// config slot takes them.

// Protocols.
import '../router/http/index.js';
import '../router/h2/index.js';
import '../router/thrift/index.js';
import '../router/mux/index.js';
import '../router/thrift/thriftmux.js';

// Namers (the Consul and ZooKeeper namers load their clients on first use).
import '../namer/fs.js';
import '../namer/kvstore.js';
import '../namer/serversets.js';
import '../namer/orch.js';

// Announcers (the ZooKeeper client is loaded only once something is announced).
import '../namer/serversets-announcer.js';

// Interpreters (default, io.prx.fs, io.prx.resolver, io.prx.resolver.http, io.prx.mesh) and transformers.
import '../interpreter/index.js';

// HTTP identifiers, response classifiers and the trace propagator.
import '../protocol/http/identifiers/index.js';
import '../protocol/http/classifiers.js';
import '../protocol/http/headers/trace-propagator.js';

// h2's gRPC response classifiers (io.prx.h2.grpc.*).
import '../protocol/h2/classifiers.js';

// Client policy: load balancers, failure accrual, client TLS.
import '../service/balancer/index.js';
import '../service/policy/accrual-kinds.js';
import '../service/tls-kinds.js';

// Telemeters.
import '../telemetry/udpstats.js';
import '../telemetry/tracelog.js';
