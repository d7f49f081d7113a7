import { HttpError } from "./http-error.js";

/** The answer to create/edit/trigger while the tenant has Background Sync turned off. */
export function premiumRefusal(): HttpError {
  return new HttpError(
    403,
    "Background Sync is a premium feature that is turned off for this tenant. A tenant admin can turn it on under Administration > Premium Features.",
  );
}
