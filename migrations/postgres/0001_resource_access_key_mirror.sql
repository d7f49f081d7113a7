DROP INDEX "resource_access_key";
CREATE INDEX "resource_access_key_mirror" ON "resource_access" USING btree ("key","mirror");