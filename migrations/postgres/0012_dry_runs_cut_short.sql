-- A `sync --full --dry-run` cut short by a release before triggers.dry_run (0009) left its trigger
-- in flight with what it had read in dry_run_seen / dry_run_revoke; resumed as a real full pass, it
-- swept the runs it had read as if ingested, deleting their keys. Those rows mark it as a dry run.
UPDATE "triggers" SET "dry_run" = true
WHERE "state" <> 'done' AND "mode" = 'full' AND NOT "dry_run"
  AND (EXISTS (SELECT 1 FROM "dry_run_seen" s WHERE s."trigger_row_id" = "triggers"."id")
    OR EXISTS (SELECT 1 FROM "dry_run_revoke" r WHERE r."trigger_row_id" = "triggers"."id"));
