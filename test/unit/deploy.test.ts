/**
 * deploy/ against the code, since no container engine runs here: the Kubernetes manifests and the
 * compose file name the environment variables the config reads, the port it listens on, the config
 * path the image expects, probe paths the HTTP server serves, Secret keys that exist and selectors
 * that match; the config they carry loads with the real loader once its placeholders are filled.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import {
  CONFIG_PATH_ENV,
  type Config,
  DEFAULT_CONFIG_PATH,
  LOG_LEVEL_ENV,
  parseConfig,
  requireDatabaseUrl,
  requireToken,
} from "../../src/config.js";
import { DEFAULT_HTTP_PORT, HTTP_LISTEN_ENV } from "../../src/config-http.js";
import { PLACEHOLDERS } from "../../src/config-placeholders.js";
import { HTTP_PATHS } from "../../src/http-server.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DEPLOY = join(ROOT, "deploy");
const read = (...path: string[]) => readFileSync(join(...path), "utf8");

// biome-ignore lint/suspicious/noExplicitAny: manifests are read loosely; what matters is asserted
type Doc = any;

const manifests: Doc[] = readdirSync(join(DEPLOY, "kubernetes"))
  .filter((f) => f.endsWith(".yaml"))
  .flatMap((f) => parseAllDocuments(read(DEPLOY, "kubernetes", f)).map((d) => d.toJS()));
const ofKind = (kind: string): Doc => {
  const found = manifests.filter((m) => m?.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0];
};

/** What the image promises (Dockerfile): its config path, port, user and `syncmirror` on PATH. */
const dockerfile = read(ROOT, "Dockerfile");
const image = {
  configPath: /SYNCMIRROR_CONFIG=(\S+)/.exec(dockerfile)?.[1],
  port: Number(/^EXPOSE (\d+)$/m.exec(dockerfile)?.[1]),
  user: /^USER (\S+)$/m.exec(dockerfile)?.[1],
  binary: /ln -s \S+ (\/usr\/local\/bin\/(\S+))/.exec(dockerfile)?.[2],
};

/** The config with the placeholders `init` would write filled, as a user does before deploying. */
function loadDeployedConfig(text: string, env: Record<string, string>): Config {
  const filled = text
    .replace(PLACEHOLDERS.baseUrl, "https://api.example.com/api/v1")
    .replace(PLACEHOLDERS.syncConfigId, "3f6c2a91-8d4e-4b7a-9c15-2e8f0d6b1a47");
  return parseConfig("deployed.yaml", filled, env);
}

/** Variables syncmirror reads: those the config names, and the ones read outside it. */
function knownVariables(config: Config): string[] {
  const database = config.database.kind === "postgres" ? [config.database.urlEnv] : [];
  return [
    config.api.tokenEnv,
    config.http.tokenEnv,
    ...database,
    HTTP_LISTEN_ENV,
    LOG_LEVEL_ENV,
    CONFIG_PATH_ENV,
    // Node's own, which the image sets too (its heap limits, docs/operations.md#memory).
    "NODE_OPTIONS",
  ];
}

/** A manifest's NODE_OPTIONS keeps the image's heap cap: peak RSS stays under 200 MB. */
const HEAP_CAP = "--max-old-space-size=96";

describe("the image (Dockerfile)", () => {
  it("declares what the deploy files rely on", () => {
    expect(image).toEqual({
      configPath: "/config/syncmirror.yaml",
      port: DEFAULT_HTTP_PORT,
      user: "node",
      binary: "syncmirror",
    });
    expect(DEFAULT_CONFIG_PATH.endsWith(image.configPath?.split("/").pop() as string)).toBe(true);
  });

  it("checks its health on /healthz at the port it exposes, and runs the config it names", () => {
    const healthcheck = /^HEALTHCHECK .*\n?.*CMD (.*)$/m.exec(dockerfile)?.[1] ?? "";
    expect(healthcheck).toContain(`http://127.0.0.1:${image.port}${HTTP_PATHS.healthz}`);
    expect(/^CMD (.*)$/m.exec(dockerfile)?.[1]).toBe(
      JSON.stringify([image.binary, "run", "--config", image.configPath]).replaceAll(",", ", "),
    );
  });

  it("builds from a context holding what it copies, without local modules, builds or data", () => {
    const ignored = read(ROOT, ".dockerignore")
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"));
    expect(ignored).toEqual(expect.arrayContaining(["node_modules", "dist", "data", ".env", "*.db"]));
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.*) \S+$/gm)].flatMap(
      (m) => m[1]?.split(" ") ?? [],
    );
    expect(copied).toEqual(expect.arrayContaining(["package-lock.json", "src", "migrations"]));
    expect(copied.filter((source) => ignored.includes(source))).toEqual([]);
  });
});

describe("deploy/kubernetes", () => {
  const deployment = ofKind("Deployment");
  const pod = deployment.spec.template.spec;
  const [container] = pod.containers;
  const configMap = ofKind("ConfigMap");
  const secret = ofKind("Secret");
  const envNames: string[] = container.env.map((e: Doc) => e.name);
  const env = Object.fromEntries(
    envNames.map((name) => [name, name === "LOG_LEVEL" ? "info" : "postgres://u:p@h/db"]),
  );
  const config = loadDeployedConfig(configMap.data["syncmirror.yaml"], env);

  it("carries the same config as deploy/syncmirror.yaml, PostgreSQL, listening on the image's port", () => {
    expect(configMap.data["syncmirror.yaml"]).toBe(read(DEPLOY, "syncmirror.yaml"));
    expect(config.database.kind).toBe("postgres");
    expect(config.http.port).toBe(image.port);
    expect(container.ports).toEqual([{ name: "http", containerPort: config.http.port }]);
  });

  it("sets every variable the config needs, from the Secret, and no variable syncmirror does not read", () => {
    expect(() => requireToken(config)).not.toThrow();
    const database = config.database;
    if (database.kind === "postgres") expect(() => requireDatabaseUrl(config, database)).not.toThrow();
    expect(envNames).toEqual(expect.arrayContaining([config.api.tokenEnv, config.http.tokenEnv]));
    expect(envNames.filter((n) => !knownVariables(config).includes(n))).toEqual([]);
    const secretRefs = container.env
      .filter((e: Doc) => e.valueFrom)
      .map((e: Doc) => e.valueFrom.secretKeyRef);
    for (const ref of secretRefs) {
      expect(ref.name).toBe(secret.metadata.name);
      expect(Object.keys(secret.stringData)).toContain(ref.key);
    }
    const fromSecret = container.env.filter((e: Doc) => e.valueFrom).map((e: Doc) => e.name);
    const secrets = [config.api.tokenEnv, config.http.tokenEnv];
    if (config.database.kind === "postgres") secrets.push(config.database.urlEnv);
    expect(fromSecret.sort()).toEqual(secrets.sort());
    const nodeOptions = container.env.find((e: Doc) => e.name === "NODE_OPTIONS")?.value;
    if (nodeOptions !== undefined) expect(nodeOptions).toContain(HEAP_CAP);
  });

  it("mounts the config where the command and the image look for it", () => {
    const mount = container.volumeMounts.find((m: Doc) => m.name === "config");
    const volume = pod.volumes.find((v: Doc) => v.name === "config");
    expect(volume.configMap.name).toBe(configMap.metadata.name);
    expect(`${mount.mountPath}/${Object.keys(configMap.data)[0]}`).toBe(image.configPath);
    expect(mount.readOnly).toBe(true);
    expect(container.command).toEqual([image.binary, "run", "--config", image.configPath]);
  });

  it("probes liveness on /healthz and readiness on /readyz, on the container's port", () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: HTTP_PATHS.healthz, port: "http" });
    expect(container.readinessProbe.httpGet).toEqual({ path: HTTP_PATHS.readyz, port: "http" });
    expect(container.ports.map((p: Doc) => p.name)).toContain("http");
  });

  it("runs as the image's non-root user on a read-only root filesystem, with limits", () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container.resources.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources.limits.memory).toEqual(expect.any(String));
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10);
  });

  it("selects the pods from the Service and the PodDisruptionBudget, keeping replicas up", () => {
    const labels = deployment.spec.template.metadata.labels;
    const service = ofKind("Service");
    const pdb = ofKind("PodDisruptionBudget");
    expect(labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(labels).toMatchObject(service.spec.selector);
    expect(labels).toMatchObject(pdb.spec.selector.matchLabels);
    expect(service.spec.ports).toEqual([{ name: "http", port: image.port, targetPort: "http" }]);
    expect(service.metadata.annotations["prometheus.io/path"]).toBe(HTTP_PATHS.metrics);
    expect(service.metadata.annotations["prometheus.io/port"]).toBe(String(image.port));
    expect(deployment.spec.replicas).toBeGreaterThan(pdb.spec.maxUnavailable);
  });

  it("lists every manifest in kustomization.yaml", () => {
    const kustomization = parse(read(DEPLOY, "kubernetes", "kustomization.yaml"));
    const files = readdirSync(join(DEPLOY, "kubernetes")).filter(
      (f) => f.endsWith(".yaml") && f !== "kustomization.yaml",
    );
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });
});

describe("deploy/docker-compose.yml", () => {
  const compose = parse(read(DEPLOY, "docker-compose.yml"));
  const service = compose.services.syncmirror;
  const postgres = compose.services.postgres;
  const text = read(DEPLOY, "syncmirror.yaml");
  const env: Record<string, string> = Object.fromEntries(
    Object.entries(service.environment as Record<string, string>).map(([k, v]) => [
      k,
      v.replace(/\$\{[^}]*\}/g, "x"),
    ]),
  );
  const config = loadDeployedConfig(text, env);

  it("runs two replicas of the image on PostgreSQL with the variables the config reads", () => {
    expect(service.deploy.replicas).toBeGreaterThanOrEqual(2);
    expect(service.build).toEqual({ context: "..", dockerfile: "Dockerfile" });
    expect(service.command).toEqual([image.binary, "run", "--config", image.configPath]);
    expect(Object.keys(env).filter((n) => !knownVariables(config).includes(n))).toEqual([]);
    if (env.NODE_OPTIONS !== undefined) expect(env.NODE_OPTIONS).toContain(HEAP_CAP);
    expect(() => requireToken(config)).not.toThrow();
    expect(config.database.kind).toBe("postgres");
    if (config.database.kind !== "postgres") return;
    const url = new URL(requireDatabaseUrl(config, config.database));
    expect(url.hostname).toBe("postgres");
    expect(url.username).toBe(postgres.environment.POSTGRES_USER);
    expect(url.pathname).toBe(`/${postgres.environment.POSTGRES_DB}`);
    expect(service.depends_on.postgres.condition).toBe("service_healthy");
  });

  it("mounts deploy/syncmirror.yaml at the image's config path and publishes its port", () => {
    expect(service.volumes).toEqual([`./syncmirror.yaml:${image.configPath}:ro`]);
    expect(config.http.port).toBe(image.port);
    for (const mapping of service.ports) expect(String(mapping).split(":").pop()).toBe(String(image.port));
    expect(service.read_only).toBe(true);
  });
});
