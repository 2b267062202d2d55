// Usage: node bench/thrift/load.mjs PORT CONNECTIONS SECONDS: framed binary calls `echo("hello")` against PORT.
// Closed-loop load: N connections, one call in flight each, for D seconds; prints rps and p50/p99 (ms).
import { connect } from 'node:net';
const [port, conns, secs] = process.argv.slice(2).map(Number);
const name = Buffer.from('echo');
function call(seq) {
  const b = Buffer.alloc(4 + 8 + 4 + 4 + 3 + 4 + 5 + 1);
  let o = 0;
  b.writeInt32BE(b.length - 4, o); o += 4; b.writeInt32BE(0x80010001 | 0, o); o += 4; b.writeInt32BE(4, o); o += 4; name.copy(b, o); o += 4;
  b.writeInt32BE(seq, o); o += 4; b[o++] = 11; b.writeInt16BE(1, o); o += 2; b.writeInt32BE(5, o); o += 4; b.write('hello', o); o += 5; b[o] = 0;
  return b;
}
const lat = [];
let done = 0;
const end = Date.now() + secs * 1000;
let open = conns;
const cpu0 = process.cpuUsage();
for (let i = 0; i < conns; i++) {
  const s = connect(port, '127.0.0.1');
  s.setNoDelay(true);
  let seq = 0, t0 = 0, buf = Buffer.alloc(0);
  const send = () => { t0 = performance.now(); s.write(call(++seq)); };
  s.on('connect', send);
  s.on('data', (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
      buf = buf.subarray(4 + buf.readInt32BE(0));
      lat.push(performance.now() - t0); done++;
      if (Date.now() < end) send(); else { s.destroy(); if (--open === 0) report(); }
    }
  });
}
function report() {
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.floor(lat.length * p)].toFixed(3);
  console.log(JSON.stringify({ rps: Math.round(done / secs), p50: q(0.5), p99: q(0.99) }));
}
