import { describe, expect, it } from "vitest";
import { parseExportPageText, stringifyExact } from "../../src/exact-json.js";

const page = (resource: string, extra = "") =>
  `{"schema_version":1,"sync_id":"s","resources":[${resource}],"page":{"offset":0,"next_offset":null${extra}}}`;

describe("an export page's numbers that a double would round", () => {
  it("are written back digit for digit from a resource's JSON parts", () => {
    const text = page(
      '{"key":"k","fields":{"id":12345678901234567890,"e":1e400,"d":0.10000000000000000555,"ok":1.5},' +
        '"metadata":[-98765432109876543210],"relations":null,"attachments":[{"data":[1e-400]}],"provenance":{"n":18446744073709551615}}',
    );
    const parsed = parseExportPageText(text) as { resources: Record<string, unknown>[] };
    const [resource] = parsed.resources;
    expect(stringifyExact(resource?.fields)).toBe(
      '{"id":12345678901234567890,"e":1e400,"d":0.10000000000000000555,"ok":1.5}',
    );
    expect(stringifyExact(resource?.metadata)).toBe("[-98765432109876543210]");
    expect(stringifyExact(resource?.attachments)).toBe('[{"data":[1e-400]}]');
    expect(stringifyExact(resource?.provenance)).toBe('{"n":18446744073709551615}');
  });

  it("stay numbers everywhere else, as JSON.parse reads them", () => {
    const text = page(
      '{"key":"k","content_hash":"sha256:5e53738e3909","title":"id 12345678901234567890","n":12345678901234567890,"fields":{"a":1}}',
      ',"total":12345678901234567890',
    );
    expect(parseExportPageText(text)).toEqual(JSON.parse(text));
  });

  it("leave strings alone, even one spelled like a number or escaping a quote", () => {
    const text = page(
      '{"key":"k","fields":{"s":"12345678901234567890","q":"say \\"1e400\\", 12345678901234567890","n":[1,2]}}',
    );
    const parsed = parseExportPageText(text) as { resources: { fields: unknown }[] };
    expect(parsed).toEqual(JSON.parse(text));
    expect(stringifyExact(parsed.resources[0]?.fields)).toBe(
      '{"s":"12345678901234567890","q":"say \\"1e400\\", 12345678901234567890","n":[1,2]}',
    );
  });
});
