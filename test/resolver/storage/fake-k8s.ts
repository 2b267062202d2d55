// The orchestrator API fake (test/helpers/fake-orch-api.ts) seen from the DTab storage's tests:
// one custom resource, written by name, with the resource definition's presence as a switch.
import type { OrchResource } from '../../../src/protocol/orch/index.js';
import { DTABS, type FakeObject, FakeOrchApi } from '../../helpers/fake-orch-api.js';

export interface FakeK8sOptions {
  readonly group?: string;
  readonly version?: string;
  readonly plural?: string;
  readonly kind?: string;
}

export class FakeK8s extends FakeOrchApi {
  readonly dtabs: OrchResource;

  constructor(opts: FakeK8sOptions = {}) {
    const res: OrchResource = { group: opts.group ?? DTABS.group, version: opts.version ?? DTABS.version, plural: opts.plural ?? DTABS.plural, kind: opts.kind ?? DTABS.kind };
    super({ resources: [res] });
    this.dtabs = res;
  }

  /** False makes every request for the resource a 404, as before its definition is installed. */
  set crdInstalled(on: boolean) {
    if (on) this.install(this.dtabs);
    else this.uninstall(this.dtabs);
  }

  /** Writes an object directly (another client), as create-or-replace. */
  apply(ns: string, name: string, body: Record<string, unknown>): FakeObject {
    return this.put(this.dtabs, { ...body, metadata: { ...(body['metadata'] ?? {}), name, namespace: ns } });
  }

  dtab(ns: string, name: string): FakeObject | undefined {
    return this.get(this.dtabs, ns, name);
  }

  stop(): Promise<void> {
    return this.close();
  }
}
