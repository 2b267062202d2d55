// The mux roles of scripts/bench-thrift.mjs, driven by prx's own mux codec (dist/protocol/mux: the
// client and server sessions, with Finagle's handshake): a backend that answers every Tdispatch
// with an Ok Rdispatch echoing its body, and a load generator of `sessions` sessions with
// `perSession` dispatches in flight on each (closed loops), to the destination /bench.
import { connect, createServer } from 'node:net';
import { CallWindow } from './procs.mjs';

const PAYLOAD_BYTES = 64;
const SESSION_OPTIONS = { maxMessageBytes: 16 * 1024 * 1024, maxFrameBytes: undefined, pingIntervalMs: 0, pingTimeoutMs: 0 };

/** prx's mux codec from dist/ (npm run build), as the other suites run prx. */
async function codec() {
  const dist = new URL('../../dist/protocol/mux/', import.meta.url);
  const [client, server, messages] = await Promise.all(['client-session.js', 'server-session.js', 'messages.js'].map((f) => import(new URL(f, dist).href)));
  return { MuxClientSession: client.MuxClientSession, MuxServerSession: server.MuxServerSession, ReplyStatus: messages.ReplyStatus };
}

/** The backend: echoes each dispatch's body; prints {"port": N}; exits when stdin closes. */
export async function muxBackendRole() {
  const { MuxServerSession, ReplyStatus } = await codec();
  const owner = {
    request(session, tag, req) {
      session.reply(tag, ReplyStatus.Ok, [], req.msg.body);
    },
    discarded() {},
    closed() {},
  };
  const server = createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => socket.destroy());
    new MuxServerSession(socket, SESSION_OPTIONS, owner);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
  process.stdin.resume();
  process.stdin.once('close', () => process.exit(0));
}

/** One closed loop on a session: the reply handler of its one dispatch in flight. */
class DispatchLoop {
  constructor(session, window, done, ok) {
    this.session = session;
    this.window = window;
    this.done = done;
    this.ok = ok;
    this.tag = 0;
    this.start = 0;
    this.req = { contexts: [], dst: '/bench', dtab: [], body: Buffer.alloc(PAYLOAD_BYTES, 0x61) };
  }

  send() {
    this.start = performance.now();
    this.session.dispatch(this, this.req);
  }

  replied(status, _contexts, body) {
    const error = status !== this.ok ? `Rdispatch status ${status}: ${body.toString('utf8', 0, 200)}` : body.length !== PAYLOAD_BYTES ? `a reply of ${body.length} bytes` : undefined;
    this.next(error);
  }

  failed(err) {
    this.next(`${err.code ?? err.name}: ${err.message}`);
  }

  next(error) {
    this.window.record(this.start, performance.now(), error);
    if (this.window.open && this.session.usable) this.send();
    else this.finish();
  }

  finish() {
    if (this.done === null) return;
    const done = this.done;
    this.done = null;
    done();
  }
}

/** The load: prints the window's JSON line once every loop has ended. */
export async function muxLoadRole({ port, sessions, perSession, warmup, duration }) {
  const { MuxClientSession, ReplyStatus } = await codec();
  const window = new CallWindow(warmup, duration);
  const owner = { gone() {}, closed() {} };
  const opened = [];
  const loops = [];
  for (let i = 0; i < sessions; i++) {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true });
    socket.on('error', () => {});
    const session = new MuxClientSession(socket, SESSION_OPTIONS, owner);
    opened.push(session);
    for (let j = 0; j < perSession; j++) loops.push(new Promise((done) => new DispatchLoop(session, window, done, ReplyStatus.Ok).send()));
  }
  await Promise.all(loops);
  for (const s of opened) s.socket.destroy();
  process.stdout.write(`${JSON.stringify(window.result())}\n`);
}
