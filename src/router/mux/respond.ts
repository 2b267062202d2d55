/**
 * How the mux router answers a failure, in mux's terms (as a Finagle mux server does): a nack
 * (retryable, with MuxFailure flags Retryable|Rejected) for what never reached an endpoint and is
 * safe to send elsewhere (the upstream's own nack, a full pool or server, a connection that could
 * not be made); an Rdispatch error with the reason (and MuxFailure flags when the failure has any) for
 * the rest; Rerr when the message itself could not be acted on (a destination that is no path).
 */
import type { Dtab } from '../../naming/index.js';
import { MuxFailureFlag, muxFailureContexts } from '../../protocol/mux/contexts.js';
import type { MuxContextEntry } from '../../protocol/mux/messages.js';
import { FailureFlag, NoBrokersAvailableError, RouterFailure } from '../../service/failures.js';
import { MuxBadDestinationError } from './errors.js';

export type MuxAnswer =
  | { readonly kind: 'nack'; readonly contexts: MuxContextEntry[] }
  | { readonly kind: 'error'; readonly message: string; readonly contexts: MuxContextEntry[] }
  | { readonly kind: 'rerr'; readonly message: string };

/** The request a failure happened on, as far as the answer depends on it. */
export interface FailedMuxRequest {
  readonly dst: string | undefined;
  readonly baseDtab: Dtab;
  readonly localDtab: Dtab | undefined;
}

function flagsOf(e: RouterFailure): bigint {
  let f = 0n;
  if (e.is(FailureFlag.Retryable)) f |= MuxFailureFlag.Retryable;
  if (e.is(FailureFlag.Rejected)) f |= MuxFailureFlag.Rejected;
  return f;
}

export function answerFor(err: unknown, r: FailedMuxRequest): MuxAnswer {
  if (err instanceof MuxBadDestinationError) return { kind: 'rerr', message: err.message };
  if (err instanceof RouterFailure) {
    // Safe to send again and never acted on: a nack. A refusal that is not retryable (the admin
    // listener as a target) is a configuration error, answered as one.
    if (err.is(FailureFlag.Retryable) && !err.is(FailureFlag.Timeout)) {
      return { kind: 'nack', contexts: muxFailureContexts(flagsOf(err) | MuxFailureFlag.Rejected) };
    }
    return { kind: 'error', message: messageOf(err, r), contexts: muxFailureContexts(flagsOf(err)) };
  }
  return { kind: 'error', message: err instanceof Error ? err.message : String(err), contexts: [] };
}

/** Finagle's text for a name with no endpoints names the dtabs it was bound with. */
function messageOf(err: RouterFailure, r: FailedMuxRequest): string {
  if (err instanceof NoBrokersAvailableError) {
    return `No hosts are available for ${r.dst ?? err.dst}, Dtab.base=[${r.baseDtab.show}], Dtab.local=[${r.localDtab?.show ?? ''}]. Remote Info: Not Available`;
  }
  return err.message;
}
