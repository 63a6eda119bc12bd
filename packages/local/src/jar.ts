import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The npm package that ships DynamoDB Local in its `emulator/` folder, pinned. */
export const DYNAMODB_LOCAL_PACKAGE = 'amplify-dynamodb-simulator@2.9.30';

/** The repository root (three levels above this file). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Where the DynamoDB Local files are cached: `.cache/dynamodb-local/` under the repository root. */
export const DYNAMODB_LOCAL_CACHE = join(REPO_ROOT, '.cache', 'dynamodb-local');

/** Paths of an installed DynamoDB Local. */
export interface DynamoDbLocalInstall {
  /** Folder holding `DynamoDBLocal.jar` and `DynamoDBLocal_lib/`. */
  emulatorDir: string;
  /** `DynamoDBLocal.jar`. */
  jar: string;
  /** Native libraries (sqlite4java), passed as `java.library.path`. */
  libDir: string;
  /** `sqlite4java.jar`, which the launcher compiles against. */
  sqliteJar: string;
  /** Folder holding the compiled loopback launcher class `SluiceDynamoDbLocal`. */
  launcherDir: string;
  /** The launcher's main class name. */
  launcherClass: string;
}

const LAUNCHER_CLASS = 'SluiceDynamoDbLocal';

/**
 * A launcher that binds DynamoDB Local to one host (default 127.0.0.1; the jar itself listens on every
 * interface and has no host option). It builds the server from the usual command-line arguments, sets the host
 * on the Jetty connector before starting (and the port from `-Dsluice.port`, which may be 0 for a free one: the
 * jar refuses `-port 0`), prints `SLUICE_DYNAMODB_READY <port>` (the bound port) and exits when its standard input closes, so the server never outlives the Node process that
 * started it, even one killed with SIGKILL.
 *
 * With `-Dsluice.sqlitePragmas=<statements separated by ;>` (and `-sharedDb`, which Sluice always uses) it runs
 * those statements on the shared database's one SQLite connection before it reports ready, and prints
 * `SLUICE_DYNAMODB_SQLITE <first column of each result>`. DynamoDB Local has no option for them: the launcher
 * creates the shared database (the private `getHandler` the first request would call) and takes its
 * `SQLiteQueue` by reflection. The queue runs every database job on that one connection, so the settings hold
 * for the life of the server.
 */
const LAUNCHER_SOURCE = `
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import com.almworks.sqlite4java.SQLiteStatement;
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.AbstractLocalDynamoDBServerHandler;
import com.amazonaws.services.dynamodbv2.local.shared.access.sqlite.SQLiteDBAccess;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class ${LAUNCHER_CLASS} {
  public static void main(String[] args) throws Exception {
    String host = System.getProperty("sluice.host", "127.0.0.1");
    String portOverride = System.getProperty("sluice.port");
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    int port = -1;
    for (Connector connector : server.getConnectors()) {
      if (connector instanceof ServerConnector) {
        ((ServerConnector) connector).setHost(host);
        if (portOverride != null) {
          ((ServerConnector) connector).setPort(Integer.parseInt(portOverride));
        }
      }
    }
    proxy.start();
    String pragmas = System.getProperty("sluice.sqlitePragmas", "");
    if (!pragmas.isEmpty()) {
      System.out.println("SLUICE_DYNAMODB_SQLITE " + runOnSharedDatabase(proxy, pragmas));
    }
    for (Connector connector : server.getConnectors()) {
      if (connector instanceof ServerConnector) {
        port = ((ServerConnector) connector).getLocalPort();
      }
    }
    System.out.println("SLUICE_DYNAMODB_READY " + port);
    System.out.flush();
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // keep reading until the parent closes the pipe
        }
      } catch (Exception ignored) {
        // treat a broken pipe like a closed one
      }
      Runtime.getRuntime().halt(0);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    proxy.join();
  }

  private static Object read(Class<?> type, String name, Object target) throws Exception {
    Field field = type.getDeclaredField(name);
    field.setAccessible(true);
    return field.get(target);
  }

  private static String runOnSharedDatabase(DynamoDBProxyServer proxy, String statements) throws Exception {
    Object serverHandler = read(DynamoDBProxyServer.class, "serverHandler", proxy);
    Object requestHandler = read(AbstractLocalDynamoDBServerHandler.class, "primaryHandler", serverHandler);
    Method getHandler = requestHandler.getClass().getDeclaredMethod("getHandler", String.class);
    getHandler.setAccessible(true);
    Object dbClient = getHandler.invoke(requestHandler, "shared");
    Object dbAccess = read(dbClient.getClass(), "dbAccess", dbClient);
    SQLiteQueue queue = (SQLiteQueue) read(SQLiteDBAccess.class, "queue", dbAccess);
    return queue.execute(new SQLiteJob<String>() {
      protected String job(SQLiteConnection connection) throws Throwable {
        StringBuilder results = new StringBuilder();
        for (String sql : statements.split(";")) {
          if (sql.trim().isEmpty()) continue;
          SQLiteStatement statement = connection.prepare(sql);
          try {
            results.append(statement.step() ? statement.columnString(0) : "-").append(' ');
          } finally {
            statement.dispose();
          }
        }
        return results.toString().trim();
      }
    }).complete();
  }
}
`;

function install(): DynamoDbLocalInstall {
  const emulatorDir = join(DYNAMODB_LOCAL_CACHE, 'emulator');
  return {
    emulatorDir,
    jar: join(emulatorDir, 'DynamoDBLocal.jar'),
    libDir: join(emulatorDir, 'DynamoDBLocal_lib'),
    sqliteJar: join(emulatorDir, 'DynamoDBLocal_lib', 'sqlite4java.jar'),
    // Keyed by the source's hash, so a changed launcher is compiled afresh.
    launcherDir: join(
      DYNAMODB_LOCAL_CACHE,
      `launcher-${createHash('sha256').update(LAUNCHER_SOURCE).digest('hex').slice(0, 12)}`,
    ),
    launcherClass: LAUNCHER_CLASS,
  };
}

/**
 * Makes sure DynamoDB Local and its loopback launcher are in the cache, and returns their paths.
 *
 * Steps, each skipped when its result is already there:
 * 1. `npm pack` the pinned `amplify-dynamodb-simulator` into a temporary folder (only the tarball, no install);
 * 2. extract only its `emulator/` folder and move it into place with one rename (safe when several processes
 *    race: the loser discards its copy);
 * 3. compile the launcher with `javac` against the jar, the same way.
 */
export async function ensureDynamoDbLocal(
  options: { log?: (line: string) => void } = {},
): Promise<DynamoDbLocalInstall> {
  const paths = install();
  const log = options.log ?? (() => {});
  await mkdir(DYNAMODB_LOCAL_CACHE, { recursive: true });
  if (!existsSync(paths.jar)) {
    log(`fetching DynamoDB Local (${DYNAMODB_LOCAL_PACKAGE}) into ${DYNAMODB_LOCAL_CACHE}`);
    const work = await mkdtemp(join(DYNAMODB_LOCAL_CACHE, 'tmp-'));
    try {
      const { stdout } = await run(
        'npm',
        ['pack', DYNAMODB_LOCAL_PACKAGE, '--pack-destination', work, '--silent', '--ignore-scripts'],
        { cwd: work, maxBuffer: 16 * 1024 * 1024 },
      );
      const tarball = stdout.trim().split('\n').pop()?.trim();
      if (!tarball) throw new Error(`npm pack ${DYNAMODB_LOCAL_PACKAGE} printed no file name`);
      await run('tar', ['-xzf', join(work, tarball), '-C', work, '--strip-components=1', 'package/emulator']);
      await rm(join(work, tarball), { force: true });
      await moveIntoPlace(join(work, 'emulator'), paths.emulatorDir);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  if (!existsSync(join(paths.launcherDir, `${LAUNCHER_CLASS}.class`))) {
    log('compiling the DynamoDB Local loopback launcher');
    const work = await mkdtemp(join(DYNAMODB_LOCAL_CACHE, 'tmp-'));
    try {
      const src = join(work, 'src');
      const out = join(work, 'launcher');
      await mkdir(src, { recursive: true });
      await mkdir(out, { recursive: true });
      const file = join(src, `${LAUNCHER_CLASS}.java`);
      await writeFile(file, LAUNCHER_SOURCE);
      await run('javac', ['-nowarn', '-cp', `${paths.jar}:${paths.sqliteJar}`, '-d', out, file], {
        maxBuffer: 16 * 1024 * 1024,
      });
      await moveIntoPlace(out, paths.launcherDir);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  return paths;
}

async function moveIntoPlace(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    // Another process won the race: its copy is as good as ours.
    if (!existsSync(to)) throw error;
  }
}

/* Run directly (`npm run setup:dynamodb`): fetch and print where it is. */
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const paths = await ensureDynamoDbLocal({ log: (line) => console.log(line) });
  console.log(`DynamoDB Local ready: ${paths.jar}`);
}
