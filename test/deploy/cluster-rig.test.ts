// The Docker rig (deploy/cluster/): it needs Docker, which the test machines lack, so its static parts are checked
// here: the compose file parses and describes Keeper, 2 shards × 2 replicas, Postgres and three instances behind
// nginx, as the sharded topology; every ClickHouse configuration file is well-formed XML and agrees with the compose
// file. The DDL the rig's instances run is the sharded rendering, whose golden files test/db/topology.test.ts checks.
import fs from 'node:fs';
import path from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parse } from 'yaml';

const RIG = path.resolve(__dirname, '..', '..', 'deploy', 'cluster');
const read = (file: string) => fs.readFileSync(path.join(RIG, file), 'utf8');
const xmlFiles = [
  'clickhouse/cluster.xml',
  'keeper/keeper.xml',
  ...fs.readdirSync(path.join(RIG, 'clickhouse', 'macros')).map((file) => `clickhouse/macros/${file}`),
];

interface Service {
  image?: string;
  build?: string;
  hostname?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const clickhouseNodes = Object.keys(services).filter((name) =>
  services[name].image?.startsWith('clickhouse/clickhouse-server'),
);
const instances = Object.keys(services).filter((name) => services[name].build);

it('the compose file parses: Keeper, four ClickHouse nodes, Postgres, three instances and nginx', () => {
  expect(services.keeper.image).toMatch(/^clickhouse\/clickhouse-keeper:/);
  expect(clickhouseNodes.sort()).toEqual(['ch-s1-r1', 'ch-s1-r2', 'ch-s2-r1', 'ch-s2-r2']);
  expect(services.postgres.image).toMatch(/^postgres:/);
  expect(instances.sort()).toEqual(['runwatch-1', 'runwatch-2', 'runwatch-3']);
  expect(services.nginx.volumes).toContain('./nginx.conf:/etc/nginx/nginx.conf:ro');
});

it('every instance runs the sharded topology on one Postgres, with the same secret and its own data volume', () => {
  const environments = instances.map((name) => services[name].environment!);
  for (const environment of environments) {
    expect(environment).toMatchObject({ CLICKHOUSE_TOPOLOGY: 'sharded', CLICKHOUSE_CLUSTER: 'runwatch' });
    expect(clickhouseNodes).toContain(new URL(environment.CLICKHOUSE_URL).hostname);
  }
  expect(new Set(environments.map((environment) => environment.DATABASE_URL)).size).toBe(1);
  expect(new Set(environments.map((environment) => environment.JWT_SECRET)).size).toBe(1);
  const dataVolumes = instances.map((name) => services[name].volumes!.find((volume) => volume.endsWith(':/data')));
  expect(new Set(dataVolumes).size).toBe(instances.length);
  // The replica the check stops is one no instance reaches the cluster through.
  expect(environments.map((environment) => new URL(environment.CLICKHOUSE_URL).hostname)).not.toContain('ch-s2-r2');
});

it.each(xmlFiles)('%s is well-formed XML', (file) => {
  expect(XMLValidator.validate(read(file))).toBe(true);
});

it('the cluster is 2 shards × 2 replicas of the compose nodes, each node mounting its own macros', () => {
  const xml = new XMLParser({ isArray: (name) => ['shard', 'replica'].includes(name) });
  const cluster = xml.parse(read('clickhouse/cluster.xml')).clickhouse.remote_servers.runwatch;
  const shards = (cluster.shard as { replica: { host: string }[] }[]).map((shard) => shard.replica.map((r) => r.host));
  expect(shards).toEqual([
    ['ch-s1-r1', 'ch-s1-r2'],
    ['ch-s2-r1', 'ch-s2-r2'],
  ]);
  shards.forEach((hosts, index) => {
    for (const host of hosts) {
      expect(services[host].volumes).toContain(
        `./clickhouse/macros/${host}.xml:/etc/clickhouse-server/config.d/macros.xml:ro`,
      );
      const macros = new XMLParser().parse(read(`clickhouse/macros/${host}.xml`)).clickhouse.macros;
      expect(macros).toEqual({ cluster: 'runwatch', shard: index + 1, replica: host });
    }
  });
});

it('nginx balances over the three instances', () => {
  const upstream = /upstream runwatch \{([^}]*)\}/.exec(read('nginx.conf'))![1];
  expect([...upstream.matchAll(/server (\S+):8080/g)].map((match) => match[1]).sort()).toEqual(instances.sort());
});
