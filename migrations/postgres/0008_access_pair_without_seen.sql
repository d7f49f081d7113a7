DROP INDEX "resource_access_pair";--> statement-breakpoint
CREATE INDEX "resource_access_pair" ON "resource_access" USING btree ("mirror","user_email","server_instance_id");