// Interim: replaced by the h2-classify branch (same exports).
import type { KindConfig } from '../../config/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { classifierFromConfig } from '../http/classifiers.js';

export interface H2Result {
  readonly method: string;
  readonly status?: number;
  readonly grpcStatus?: number | undefined;
  readonly ended: boolean;
  readonly error?: Error | undefined;
  readonly retryableHeader?: boolean;
}
export interface H2Classifier {
  readonly needsEnd: boolean;
  classify(r: H2Result): ResponseClass;
}
export function h2ClassifierFromConfig(cfg: KindConfig | undefined): H2Classifier {
  const http = classifierFromConfig(cfg, 'h2');
  return {
    needsEnd: false,
    classify: (r) => http.classify({ method: r.method, ...(r.status === undefined ? {} : { status: r.status }), ...(r.error === undefined ? {} : { error: r.error }), ...(r.retryableHeader === undefined ? {} : { retryableHeader: r.retryableHeader }) }),
  };
}
