/**
 * What the scheduler needs from node-cron beside scheduling: the name of a tick that every replica
 * agrees on, and node-cron's own messages routed into the daemon's log.
 */
import type { Logger as CronLogger } from "node-cron";
import type { Logger } from "pino";

/**
 * A tick's name across replicas: its scheduled time rounded to the expression's granularity (the
 * minute, or the second for a six-field expression), so replicas whose clocks differ by less than
 * half of that name the same tick and only one of them takes it.
 */
export function tickIdentity(expression: string, scheduled: Date): string {
  const stepMs = expression.trim().split(/\s+/).length === 6 ? 1000 : 60_000;
  return new Date(Math.round(scheduled.getTime() / stepMs) * stepMs).toISOString();
}

/** node-cron's own messages (missed executions, overlap) into the daemon's log. */
export function cronLogger(log: Logger): CronLogger {
  const write = (level: "debug" | "error", message: string | Error, err?: Error) =>
    message instanceof Error ? log[level]({ err: message }, message.message) : log[level]({ err }, message);
  return {
    info: (message) => log.debug(message),
    warn: (message) => log.warn(message),
    error: (message, err) => write("error", message, err),
    debug: (message, err) => write("debug", message, err),
  };
}
