/**
 * The attributes prx sends the mixer, as Linkerd 1's istio kinds did: a Check carries
 * `request.path`, `target.service`, `source.labels` and `target.labels`; a Report adds
 * `response.code` and `response.duration`. The source is not known to a proxy outside the caller's
 * pod, so its labels are `app`/`version` `unknown`, as Linkerd 1 sent them. Pure: no I/O.
 */
import type { MeshTarget } from '../identifiers/types.js';
import type { PolicyRequest } from '../request-policy.js';

/** Typed attributes by name (the mixer's attribute vocabulary). */
export interface AttributeBag {
  readonly strings: Readonly<Record<string, string>>;
  readonly int64s: Readonly<Record<string, number>>;
  readonly durationsMs: Readonly<Record<string, number>>;
  readonly stringMaps: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

const UNKNOWN = 'unknown';

function targetLabels(target: MeshTarget | undefined): Record<string, string> {
  if (target === undefined) return { app: UNKNOWN, version: UNKNOWN };
  // The app is the service's first DNS label (Linkerd 1's reading of `reviews.default.svc…`).
  return { app: target.service.split('.')[0] || UNKNOWN, version: UNKNOWN, ...target.labels };
}

/** A Check's attributes. */
export function checkAttributes(req: PolicyRequest): AttributeBag {
  return {
    strings: { 'request.path': req.path, 'target.service': req.target?.service ?? UNKNOWN },
    int64s: {},
    durationsMs: {},
    stringMaps: { 'source.labels': { app: UNKNOWN, version: UNKNOWN }, 'target.labels': targetLabels(req.target) },
  };
}

/** A Report's attributes: the Check's plus the response's status and duration. */
export function reportAttributes(req: PolicyRequest, status: number, durationMs: number): AttributeBag {
  const check = checkAttributes(req);
  return { ...check, int64s: { 'response.code': status }, durationsMs: { 'response.duration': durationMs } };
}

/** The `Attributes` message of a bag (plain object, fields as in mixer.proto): one dictionary per message. */
export interface AttributesMessage {
  dictionary: Record<number, string>;
  string_attributes: Record<number, string>;
  int64_attributes: Record<number, number>;
  duration_attributes: Record<number, { seconds: number; nanos: number }>;
  stringMap_attributes: Record<number, { map: Record<number, string> }>;
}

export function attributesMessage(bag: AttributeBag): AttributesMessage {
  const words: string[] = [];
  const index = new Map<string, number>();
  const word = (w: string): number => {
    let i = index.get(w);
    if (i === undefined) {
      i = words.length;
      words.push(w);
      index.set(w, i);
    }
    return i;
  };
  const msg: AttributesMessage = { dictionary: {}, string_attributes: {}, int64_attributes: {}, duration_attributes: {}, stringMap_attributes: {} };
  for (const [k, v] of Object.entries(bag.strings)) msg.string_attributes[word(k)] = v;
  for (const [k, v] of Object.entries(bag.int64s)) msg.int64_attributes[word(k)] = v;
  for (const [k, ms] of Object.entries(bag.durationsMs)) {
    const whole = Math.max(0, ms);
    const seconds = Math.floor(whole / 1000);
    msg.duration_attributes[word(k)] = { seconds, nanos: Math.min(999_999_999, Math.round((whole - seconds * 1000) * 1e6)) };
  }
  for (const [k, m] of Object.entries(bag.stringMaps)) {
    const map: Record<number, string> = {};
    for (const [mk, mv] of Object.entries(m)) map[word(mk)] = mv;
    msg.stringMap_attributes[word(k)] = { map };
  }
  words.forEach((w, i) => (msg.dictionary[i] = w));
  return msg;
}
