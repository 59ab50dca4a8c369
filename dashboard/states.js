// Pack states as the API names them (openapi.yaml `Pack.state`), and what a person may do in each.

export const State = Object.freeze({
  inactive: "inactive",
  queued: "queued",
  active: "active",
  complete: "complete",
  failed: "failed",
});

const allowed = {
  suspend: [State.queued, State.active],
  resume: [State.inactive, State.failed],
  invalidate: [State.complete],
  "check-update": [State.complete],
  preview: [State.complete],
  export: [State.complete],
};

/** Whether `action` (a button's data-action) makes sense for a pack in `state`. */
export function allows(action, state) {
  const states = allowed[action];
  return states === undefined || states.includes(state);
}

export function isDownloading(state) {
  return state === State.active || state === State.queued;
}
