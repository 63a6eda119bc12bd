import {
  ArchiveCursorStore,
  BackfillStore,
  ControlStore,
  CursorStore,
  LeaseStore,
  OrganizationStore,
  RunStateStore,
  RunStore,
} from '@sluice/control';
import type { EngineDeps } from '@sluice/engine';

/** The control-table stores the engine's run steps use, on one table: dispatch and run-control build them alike. */
export function engineControlStores(
  tableName: string,
): Pick<
  EngineDeps,
  | 'controlStore'
  | 'leases'
  | 'cursors'
  | 'runs'
  | 'runState'
  | 'archiveCoverage'
  | 'backfills'
  | 'organizations'
> {
  return {
    controlStore: new ControlStore({ tableName }),
    leases: new LeaseStore({ tableName }),
    cursors: new CursorStore({ tableName }),
    runs: new RunStore({ tableName }),
    runState: new RunStateStore({ tableName }),
    archiveCoverage: new ArchiveCursorStore({ tableName }),
    backfills: new BackfillStore({ tableName }),
    // The children a parent's export includes: read only for such an export (planning, Dispatch's check).
    organizations: new OrganizationStore({ tableName }),
  };
}
