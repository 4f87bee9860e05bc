// A minimal in-process anon-rpc harness (privacy-ethereum/anon-rpc SPEC.md §5, §7, §8) for the
// SDK's tests: the host side (`ready`, a this-free `fetch`, `close`) and the capability API the
// worker gets (`config` as a structured clone, `acceptCall` with ordered no-drop queueing and
// abort, `respond` at most once, `signalReady`/`signalFailed` with failure final). It has no
// sandbox, bundle hashing or KPS (§4, §6, §10): the tests drive the worker's side of the
// interface, not a harness's isolation. Not a test itself: node --test finds none here.

/** A host-side `AnonRpcWorker` plus the worker API it grants. */
export function inProcessHarness(config) {
  const calls = [];
  const takers = [];
  let failure;
  let ready = false;
  let settleReady;
  const readyPromise = new Promise((resolve, reject) => {
    settleReady = { resolve, reject };
  });
  readyPromise.catch(() => {});

  function fail(reason = {}) {
    if (failure) {
      return;
    }
    failure = Object.assign(new Error(reason.message ?? "worker failed"), { code: reason.code });
    settleReady.reject(failure);
    for (const call of calls.splice(0)) {
      call.fail(failure);
    }
  }

  function deliver(call) {
    const taker = takers.shift();
    if (taker) {
      taker(call);
    } else {
      calls.push(call);
    }
  }

  const api = {
    config: config === undefined ? undefined : structuredClone(config),
    signalReady() {
      if (!failure && !ready) {
        ready = true;
        settleReady.resolve();
      }
    },
    signalFailed: fail,
    acceptCall(opts = {}) {
      if (calls.length > 0) {
        return Promise.resolve(calls.shift());
      }
      return new Promise((resolve, reject) => {
        const taker = (call) => resolve(call);
        takers.push(taker);
        opts.signal?.addEventListener(
          "abort",
          () => {
            const at = takers.indexOf(taker);
            if (at >= 0) {
              takers.splice(at, 1);
              reject(new DOMException("acceptCall aborted", "AbortError"));
            }
          },
          { once: true },
        );
      });
    },
  };

  const encoder = new TextEncoder();
  /** The host's fetch: builds a FetchCall from (url, init) and waits for the worker's respond. */
  const fetch = (input, init = {}) => {
    if (failure) {
      return Promise.reject(failure);
    }
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const headers = [...new Headers(init.headers ?? {}).entries()];
    const body = typeof init.body === "string" ? encoder.encode(init.body) : init.body;
    return new Promise((resolve, reject) => {
      let responded = false;
      deliver({
        kind: "fetch",
        url,
        requestInit: { method: init.method ?? "GET", headers, body, signal: init.signal },
        respond(response) {
          if (responded) {
            throw new Error("respond called twice");
          }
          responded = true;
          Promise.resolve(response).then(
            (r) => resolve(new Response(r.status === 204 ? null : r.body, { status: r.status, headers: r.headers })),
            reject,
          );
        },
        fail: reject,
      });
    });
  };

  return {
    api,
    ready: readyPromise,
    fetch,
    /** Delivers a call of another kind (§8: the worker must not crash on it). */
    deliverOther(kind) {
      return new Promise((resolve, reject) => deliver({ kind, respond: (r) => Promise.resolve(r).then(resolve, reject) }));
    },
    close() {
      fail({ code: "closed", message: "harness closed" });
    },
  };
}
