// The resolver's built-in plugin modules. Each registers its kinds with the config registry when
// imported, so `prx-resolver` imports this list before it loads a config (validation looks kinds
// up by name). Namers and telemeters are the proxy's own.

// Namers.
import '../namer/fs.js';
import '../namer/kvstore.js';
import '../namer/serversets.js';
import '../namer/orch.js';

// Telemeters (tracers they supply are ignored: the resolver does not trace).
import '../telemetry/udpstats.js';
import '../telemetry/tracelog.js';

// Interfaces.
import './interfaces/http-controller.js';
import './interfaces/mesh.js';
import './interfaces/destination.js';
import './interfaces/thrift-namer.js';

// Dtab storage: every kind (in-memory, etcd, ZooKeeper, Consul, Kubernetes).
import './storage/index.js';
