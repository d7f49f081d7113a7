/**
 * Cron expressions in the config (`incremental_cron`, `full_cron`): node-cron decides what is
 * valid; this turns its verdict into a message that names the field at fault and its range, so
 * `"0 25 * * *"` reads `the hour field is "25", out of range: hours go from 0 to 23`.
 */
import { validate, validateDetailed } from "node-cron";
import { z } from "zod";

/** node-cron's field keys, with what a person calls them and what they may hold. */
const FIELDS: Readonly<Record<string, { name: string; range: string }>> = {
  second: { name: "second", range: "seconds go from 0 to 59" },
  minute: { name: "minute", range: "minutes go from 0 to 59" },
  hour: { name: "hour", range: "hours go from 0 to 23" },
  dayOfMonth: { name: "day-of-month", range: "days of the month go from 1 to 31" },
  month: { name: "month", range: "months go from 1 to 12 (or jan to dec)" },
  dayOfWeek: { name: "day-of-week", range: "days of the week go from 0 to 7, both Sunday (or sun to sat)" },
};

const FORMAT =
  '5 fields "minute hour day-of-month month day-of-week" (6 with seconds first), e.g. "*/15 * * * *"';

/** What is wrong with `expression`, in the words of the config's reader; undefined when it is valid. */
export function describeCronProblem(expression: string): string | undefined {
  // node-cron's own yes/no decides, so the scheduler never meets an expression passed here.
  if (validate(expression)) return undefined;
  const first = detailOf(expression);
  const field = first ? FIELDS[first.field] : undefined;
  if (first && field && /impossible day of month/.test(first.message))
    return `never fires: no month it names has a day ${first.value ?? ""} (${FORMAT})`;
  if (first && field)
    return `the ${field.name} field is ${JSON.stringify(first.value ?? "")}, out of range: ${field.range}`;
  const count = expression.trim().split(/\s+/).filter(Boolean).length;
  if (count !== 5 && count !== 6) return `has ${count} field(s): write ${FORMAT}`;
  return `is not a cron expression (${first?.message ?? "a field holds characters cron does not know"}): write ${FORMAT}`;
}

function detailOf(expression: string): { field: string; value?: string; message: string } | undefined {
  try {
    return validateDetailed(expression).errors[0];
  } catch {
    return undefined;
  }
}

/** A config value holding a cron expression, refused with `describeCronProblem`'s message. */
export const cronExpression = z.string().superRefine((value, ctx) => {
  const problem = describeCronProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});
