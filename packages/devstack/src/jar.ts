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
 * jar refuses `-port 0`), prints `SLUICE_DYNAMODB_READY <port>` (the bound port) and exits when its standard
 * input closes, so the server never outlives the Node process that started it, even one killed with SIGKILL.
 *
 * With `-Dsluice.snapshotFile=<path>` (and `-inMemory -sharedDb`, as Sluice runs it) the in-memory database is
 * kept in that file, an ordinary SQLite database in DynamoDB Local's own format:
 * - before it reports ready, the launcher restores the file's tables, rows and indexes into memory (one
 *   transaction: `ATTACH`, `CREATE` and `INSERT … SELECT`), printing
 *   `SLUICE_DYNAMODB_RESTORED <tables> <bytes> <ms>`;
 * - every `-Dsluice.snapshotIntervalMs` (default 30000, or ten times the last snapshot's length if longer, so
 *   that snapshots hold the database under a tenth of the time) when something changed, and when the JVM exits
 *   (standard input closed, SIGTERM, SIGINT), it copies the database into `<path>.tmp` with SQLite's online
 *   backup, syncs it, and renames it over the file: a snapshot is whole or absent, never half-written. It prints
 *   `SLUICE_DYNAMODB_SNAPSHOT <bytes> <ms>`, or `SLUICE_DYNAMODB_SNAPSHOT_FAILED <reason>`.
 *
 * DynamoDB Local has no option for any of it: the launcher creates the shared database (the private
 * `getHandler` the first request would call) and takes its `SQLiteQueue` by reflection. The queue runs every
 * database job on the database's one connection, one at a time, so a restore finishes before the first request
 * and a snapshot sees no half-done write.
 */
const LAUNCHER_SOURCE = `
import com.almworks.sqlite4java.SQLiteBackup;
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import com.almworks.sqlite4java.SQLiteStatement;
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.AbstractLocalDynamoDBServerHandler;
import com.amazonaws.services.dynamodbv2.local.shared.access.sqlite.SQLiteDBAccess;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.io.File;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class ${LAUNCHER_CLASS} {
  private static final Object SNAPSHOT_LOCK = new Object();
  private static long savedChanges = -1;

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
    String snapshotPath = System.getProperty("sluice.snapshotFile", "");
    if (!snapshotPath.isEmpty()) {
      File snapshot = new File(snapshotPath);
      SQLiteQueue queue = sharedQueue(proxy);
      if (snapshot.exists()) {
        try {
          System.out.println("SLUICE_DYNAMODB_RESTORED " + restore(queue, snapshot));
        } catch (RuntimeException error) {
          System.out.println("SLUICE_DYNAMODB_RESTORE_FAILED " + String.valueOf(error.getMessage()).replace('\\n', ' '));
          System.out.flush();
          Runtime.getRuntime().halt(1);
        }
      }
      long restoredChanges = run(queue, new SQLiteJob<Long>() {
        protected Long job(SQLiteConnection connection) throws Throwable {
          return totalChanges(connection);
        }
      });
      synchronized (SNAPSHOT_LOCK) {
        savedChanges = restoredChanges;
      }
      long interval = Long.parseLong(System.getProperty("sluice.snapshotIntervalMs", "30000"));
      Thread saver = new Thread(() -> {
        long lastMs = 0;
        for (;;) {
          try {
            // A snapshot holds the database for its length: keep that under a tenth of the time.
            Thread.sleep(Math.max(interval, 10 * lastMs));
          } catch (InterruptedException e) {
            return;
          }
          long started = System.nanoTime();
          snapshotIfChanged(queue, snapshot);
          lastMs = (System.nanoTime() - started) / 1_000_000;
        }
      });
      saver.setDaemon(true);
      saver.start();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> snapshotIfChanged(queue, snapshot)));
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
      System.exit(0); // runs the shutdown hook: the last snapshot
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

  private static SQLiteQueue sharedQueue(DynamoDBProxyServer proxy) throws Exception {
    Object serverHandler = read(DynamoDBProxyServer.class, "serverHandler", proxy);
    Object requestHandler = read(AbstractLocalDynamoDBServerHandler.class, "primaryHandler", serverHandler);
    Method getHandler = requestHandler.getClass().getDeclaredMethod("getHandler", String.class);
    getHandler.setAccessible(true);
    Object dbClient = getHandler.invoke(requestHandler, "shared");
    Object dbAccess = read(dbClient.getClass(), "dbAccess", dbClient);
    return (SQLiteQueue) read(SQLiteDBAccess.class, "queue", dbAccess);
  }

  private static String quoted(String name) {
    return "\\"" + name.replace("\\"", "\\"\\"") + "\\"";
  }

  /** Runs a job on the database's connection and returns its result, or throws its error. */
  private static <T> T run(SQLiteQueue queue, SQLiteJob<T> job) {
    T result = queue.execute(job).complete();
    Throwable error = job.getError();
    if (error != null) throw new RuntimeException(String.valueOf(error.getMessage()), error);
    if (job.isCancelled()) throw new RuntimeException("the database queue stopped");
    return result;
  }

  /** The rows the connection has changed since it opened: a snapshot is due when this moved. */
  private static long totalChanges(SQLiteConnection connection) throws Exception {
    SQLiteStatement statement = connection.prepare("SELECT total_changes()");
    try {
      statement.step();
      return statement.columnLong(0);
    } finally {
      statement.dispose();
    }
  }

  /** Copies every table, its rows and its indexes from the file into the (empty but for DynamoDB Local's own tables) database. */
  private static String restore(SQLiteQueue queue, File snapshot) {
    long started = System.nanoTime();
    return run(queue, new SQLiteJob<String>() {
      protected String job(SQLiteConnection connection) throws Throwable {
        connection.exec("ATTACH DATABASE '" + snapshot.getAbsolutePath().replace("'", "''") + "' AS snapshot");
        int tables = 0;
        try {
          List<String[]> objects = new ArrayList<>();
          SQLiteStatement statement = connection.prepare(
            "SELECT type, name, sql FROM snapshot.sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
              + " ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END");
          try {
            while (statement.step()) {
              objects.add(new String[] { statement.columnString(0), statement.columnString(1), statement.columnString(2) });
            }
          } finally {
            statement.dispose();
          }
          connection.exec("BEGIN");
          try {
            for (String[] object : objects) {
              String name = quoted(object[1]);
              if (object[0].equals("table")) {
                connection.exec("DROP TABLE IF EXISTS main." + name);
                connection.exec(object[2]);
                connection.exec("INSERT INTO main." + name + " SELECT * FROM snapshot." + name);
                tables++;
              } else {
                connection.exec("DROP " + object[0].toUpperCase() + " IF EXISTS main." + name);
                connection.exec(object[2]);
              }
            }
            connection.exec("COMMIT");
          } catch (Throwable error) {
            connection.exec("ROLLBACK");
            throw error;
          }
        } finally {
          connection.exec("DETACH DATABASE snapshot");
        }
        return tables + " " + snapshot.length() + " " + (System.nanoTime() - started) / 1_000_000;
      }
    });
  }

  /** Backs the database up into a temporary file beside the snapshot, syncs it and renames it over the snapshot. */
  private static void snapshotIfChanged(SQLiteQueue queue, File snapshot) {
    synchronized (SNAPSHOT_LOCK) {
      long started = System.nanoTime();
      File temporary = new File(snapshot.getPath() + ".tmp");
      try {
        Long changes = run(queue, new SQLiteJob<Long>() {
          protected Long job(SQLiteConnection connection) throws Throwable {
            long now = totalChanges(connection);
            if (now == savedChanges) return null;
            Files.deleteIfExists(temporary.toPath());
            SQLiteBackup backup = connection.initializeBackup(temporary);
            try {
              backup.backupStep(-1);
              if (!backup.isFinished()) throw new IllegalStateException("the backup did not finish");
            } finally {
              backup.dispose();
            }
            return now;
          }
        });
        if (changes == null) return;
        try (RandomAccessFile file = new RandomAccessFile(temporary, "rw")) {
          file.getFD().sync();
        }
        Files.move(temporary.toPath(), snapshot.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        savedChanges = changes;
        System.out.println("SLUICE_DYNAMODB_SNAPSHOT " + snapshot.length() + " " + (System.nanoTime() - started) / 1_000_000);
      } catch (Throwable error) {
        System.out.println("SLUICE_DYNAMODB_SNAPSHOT_FAILED " + String.valueOf(error.getMessage()).replace('\\n', ' '));
      }
      System.out.flush();
    }
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
