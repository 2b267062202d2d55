// The io.prx.orch namers' address arithmetic: port names against Endpoints subsets, Service port
// numbers through targetPort (integer, named, absent), ready addresses only, TCP only, nodeName
// metadata, load-balancer ingress addresses, and the port segments a watched object can bind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type EndpointsView, type ServiceView, endpointAddresses, externalAddresses, parsePortRef, portSegments,
} from '../../src/namer/orch-endpoints.js';
import type { Address } from '../../src/naming/index.js';

const show = (list: Address[] | undefined): string[] | undefined => list?.map((a) => `${a.host}:${a.port}`);

const endpoints: EndpointsView = {
  subsets: [
    {
      addresses: [{ ip: '10.0.0.2', nodeName: 'node-b' }, { ip: '10.0.0.1', nodeName: 'node-a' }],
      notReadyAddresses: [{ ip: '10.0.0.9' }],
      ports: [{ name: 'http', port: 8080 }, { name: 'admin', port: 9990, protocol: 'TCP' }, { name: 'stats', port: 8125, protocol: 'UDP' }],
    },
    // A second subset: pods whose named container port differs.
    { addresses: [{ ip: '10.0.1.1' }], ports: [{ name: 'http', port: 8081 }] },
    // Starting pods only: the port is known, no address is ready.
    { notReadyAddresses: [{ ip: '10.0.2.1' }], ports: [{ name: 'grpc', port: 9000 }] },
  ],
};

const service: ServiceView = {
  spec: {
    ports: [
      { name: 'http', port: 80, targetPort: 'http' },
      { name: 'admin', port: 9990, targetPort: 9990 },
      { name: 'plain', port: 7000 },
      { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' },
    ],
  },
  status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }, { hostname: 'lb.example.com' }] } },
};

describe('io.prx.orch address arithmetic', () => {
  it('parses a port segment: digits are a Service port number, anything else a port name', () => {
    assert.deepEqual(parsePortRef('80'), { kind: 'number', number: 80 });
    assert.deepEqual(parsePortRef('http'), { kind: 'name', name: 'http' });
    assert.deepEqual(parsePortRef('h2c'), { kind: 'name', name: 'h2c' });
  });

  it('a port name binds every subset with that port: ready addresses only, sorted, with nodeName', () => {
    const list = endpointAddresses(endpoints, undefined, parsePortRef('http'));
    assert.deepEqual(show(list), ['10.0.0.1:8080', '10.0.0.2:8080', '10.0.1.1:8081']);
    assert.deepEqual(list?.[0]?.meta, { nodeName: 'node-a' });
    assert.deepEqual(list?.[2]?.meta, {});
    assert.deepEqual(show(endpointAddresses(endpoints, undefined, parsePortRef('admin'))), ['10.0.0.1:9990', '10.0.0.2:9990']);
  });

  it('a known port without ready addresses is an empty set; an unknown or UDP port, or no object, is Neg', () => {
    assert.deepEqual(endpointAddresses(endpoints, undefined, parsePortRef('grpc')), []);
    assert.equal(endpointAddresses(endpoints, undefined, parsePortRef('nope')), undefined);
    assert.equal(endpointAddresses(endpoints, undefined, parsePortRef('stats')), undefined);
    assert.equal(endpointAddresses(undefined, undefined, parsePortRef('http')), undefined);
    assert.equal(endpointAddresses({ subsets: [] }, undefined, parsePortRef('http')), undefined);
  });

  it('a port number goes through the Service: a named targetPort per subset, an integer one on every address, none = the same number', () => {
    assert.deepEqual(show(endpointAddresses(endpoints, service, parsePortRef('80'))), ['10.0.0.1:8080', '10.0.0.2:8080', '10.0.1.1:8081']);
    assert.deepEqual(show(endpointAddresses(endpoints, service, parsePortRef('9990'))), ['10.0.0.1:9990', '10.0.0.2:9990', '10.0.1.1:9990']);
    assert.deepEqual(show(endpointAddresses(endpoints, service, parsePortRef('7000'))), ['10.0.0.1:7000', '10.0.0.2:7000', '10.0.1.1:7000']);
  });

  it('a port number the Service does not have (or a UDP one, or no Service) is Neg; no Endpoints object yet is an empty set', () => {
    assert.equal(endpointAddresses(endpoints, service, parsePortRef('81')), undefined);
    assert.equal(endpointAddresses(endpoints, service, parsePortRef('53')), undefined);
    assert.equal(endpointAddresses(endpoints, undefined, parsePortRef('80')), undefined);
    assert.deepEqual(endpointAddresses(undefined, service, parsePortRef('80')), []);
  });

  it('a single-port Service: an unnamed Service port finds the unnamed endpoints port through a named targetPort', () => {
    const svc: ServiceView = { spec: { ports: [{ port: 80, targetPort: 'web' }] } };
    const eps: EndpointsView = { subsets: [{ addresses: [{ ip: '10.1.0.1' }], ports: [{ port: 3000 }] }] };
    assert.deepEqual(show(endpointAddresses(eps, svc, parsePortRef('80'))), ['10.1.0.1:3000']);
  });

  it('external: the load balancer ingress (IP, else host name) on the Service port, by name or number', () => {
    assert.deepEqual(show(externalAddresses(service, parsePortRef('http'))), ['203.0.113.7:80', 'lb.example.com:80']);
    assert.deepEqual(show(externalAddresses(service, parsePortRef('9990'))), ['203.0.113.7:9990', 'lb.example.com:9990']);
    assert.equal(externalAddresses(service, parsePortRef('8080')), undefined);
    assert.equal(externalAddresses(undefined, parsePortRef('http')), undefined);
    assert.deepEqual(externalAddresses({ spec: { ports: service.spec?.ports ?? [] } }, parsePortRef('http')), []);
  });

  it('lists the port segments an object binds', () => {
    assert.deepEqual(portSegments(endpoints, undefined), ['admin', 'grpc', 'http']);
    assert.deepEqual(portSegments(endpoints, service), ['7000', '80', '9990', 'admin', 'grpc', 'http']);
    assert.deepEqual(portSegments(undefined, service, true), ['7000', '80', '9990', 'admin', 'http', 'plain']);
  });
});
