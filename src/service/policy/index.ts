/** Runtime policies: backoff streams, retry budgets, failure accrual, per-name parameters. */
export {
  NO_BACKOFF,
  backoffFromConfig,
  constant,
  exponentialJittered,
  jittered,
  type Backoff,
  type BackoffStream,
  type Random,
} from './backoff.js';
export { RetryTimer } from './retry-timer.js';
export { RETRY_BUDGET_DEFAULTS, RetryBudget, retryBudgetFromConfig, type RetryBudgetConfig, type RetryBudgetOptions } from './retry-budget.js';
export {
  MIN_REQUESTS_IN_WINDOW,
  consecutiveFailures,
  none,
  successRate,
  successRateWindowed,
  type FailureAccrualPolicy,
  type FailureAccrualPolicyFactory,
} from './failure-accrual.js';
export { FailureAccrualState, type AccrualStatus } from './accrual-state.js';
export { WindowedAdder, type Clock } from './windowed-adder.js';
export {
  PolicyResolver,
  resolvePolicyParams,
  type PolicyConfig,
  type ResolvedPolicyParams,
} from './params.js';
export {
  accrualFromConfig,
  consecutiveFailuresSchema,
  noAccrualSchema,
  successRateSchema,
  successRateWindowedSchema,
  type AccrualContext,
} from './accrual-kinds.js';
