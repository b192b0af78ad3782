// The start of index.d.ts, by hand: what index.js and lib/ add to the addon
// as behaviour (the errors' constructors, `isKomaError`, the Turn, the
// approval function). The types of values after it are generated from
// schema/ (scripts/generate.mjs), and the `Client` class last by napi.

/**
 * `onApproval` as a function: called with each `approval_requested` of the
 * turn, it answers `"allow"` or `"deny"`, or a promise of one (it may take
 * as long as a person needs). An answer that is neither, a throw or a
 * rejection denies, and the turn then fails with `invalid_params` (its
 * `cause` is what the function threw).
 *
 * The promise's type admits any string so that the natural async function
 * compiles: TypeScript widens an async function's returned literal to
 * `string` when the expected type mixes a promise with a plain value (a
 * limitation of its contextual typing, the same in TypeScript 7). A plain
 * function's answer is still checked.
 */
export type ApprovalHandler = (
  request: ApprovalRequestedData,
) => ApprovalDecision | Promise<ApprovalDecision | (string & {})>

/**
 * A turn started by `client.turn()`: an async iterable of its events (its
 * `turn_started` through its `turn_finished`, with the `state` and
 * `diagnostic` events between them, and an overflow report if one hit),
 * its id, its result, and a way to interrupt it. A loop over it ends the
 * way its result settles: after its events, normally, or throwing the
 * error the result rejects with. Leaving a loop early (`break`, `return`,
 * a throw) interrupts the turn if it still runs; the result then settles
 * when its `turn_finished` arrives, with the status koma reports (normally
 * `"interrupted"`). Iterating again goes on from where the last loop stopped.
 *
 * Only `client.turn()` makes one: it is a type with no constructor.
 */
export interface Turn extends AsyncIterable<EventItem> {
  /**
   * The turn id, once `submit` (or `interrupt_and_submit`) has answered.
   * Rejects as the submit does (for example remote `busy`).
   */
  readonly id: Promise<string>
  /**
   * The turn's result, once its `turn_finished` has arrived. Rejects with
   * `aborted` or `timeout` (after the agent was interrupted), with
   * `invalid_params` if the options were bad or `onApproval` failed
   * (after the turn finished), or with the client's error if it failed
   * first; every rejection carries the result so far as `result`.
   */
  readonly result: Promise<TurnResult>
  /** Interrupt this turn if it is still running (nothing is written otherwise). */
  readonly interrupt: () => Promise<void>
}

/** What every error of the package has; the class of its code narrows `code` (and adds `remote`). */
export interface KomaErrorBase<C extends ErrorCode> extends Error {
  readonly code: C
  /** What led to it, if anything did: a signal's reason, what `onApproval` threw. */
  cause?: unknown
  /**
   * What the turn had come to, on a rejection of `turn.result` or `run()`
   * (and an error a loop over a Turn throws).
   */
  result?: PartialTurnResult
}

/** The last argument of an error's constructor: what the package sets on the errors it makes. */
export interface KomaErrorOptions {
  cause?: unknown
  result?: PartialTurnResult | undefined
  remote?: RemoteError | undefined
}

/**
 * The class of the errors of one code (`TransportFailure`, `TimedOut`, ...):
 * `new TransportFailure(message)` makes one (a test may throw it where the
 * package would), and `instanceof` is true for the errors of that code only.
 */
export interface KomaErrorClass<E extends KomaError, O extends KomaErrorOptions = KomaErrorOptions> {
  new (message: string, ...options: {} extends O ? [options?: O] : [options: O]): E
  readonly prototype: E
  [Symbol.hasInstance](value: unknown): value is E
}

/**
 * `KomaError`, the class of every error of the package: `err instanceof
 * KomaError` narrows to the union of the classes of the codes, where `code`
 * narrows further. `new KomaError(code, message)` makes an error of the
 * class of `code`, as the package does.
 */
export interface KomaErrorConstructor {
  new <C extends ErrorCode>(code: C, message: string, options?: KomaErrorOptions): Extract<KomaError, { code: C }>
  readonly prototype: KomaErrorBase<ErrorCode>
  [Symbol.hasInstance](value: unknown): value is KomaError
}

/**
 * `err instanceof KomaError`: whether `err` is an error of this package (made
 * by it, or by one of its constructors). Its `name` is `"AbortError"` for
 * code `aborted`, `"TimeoutError"` for `timeout`, and `"KomaError"` otherwise.
 */
export declare const KomaError: KomaErrorConstructor

/**
 * Whether `value` is an error of this package (`value instanceof
 * KomaError`): one it made, or one made with its constructors, not any
 * `Error` with a `code`. In a `catch`, it narrows to `KomaError`, and then
 * `code` narrows:
 *
 * ```ts
 * try { await client.submit({ text }); } catch (e) {
 *   if (isKomaError(e) && e.code === "remote" && e.remote.code === "busy") retry();
 * }
 * ```
 */
export declare function isKomaError(value: unknown): value is KomaError
