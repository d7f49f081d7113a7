import { HttpError } from "./http-error.js";

/** The answer to create/edit/trigger while the tenant has Background Sync turned off. */
export function premiumRefusal(status: 403 | 409): HttpError {
  return new HttpError(
    status,
    "Background Sync is a premium feature that is turned off for this tenant. A tenant admin can turn it on under Administration > Premium Features.",
  );
}
