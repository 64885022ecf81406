// What the server tells the page of the deployment (serve.ts, `<body data-settings>`): the settings no API answers.
import { DEFAULT_LOOP_THRESHOLDS, type LoopThresholds } from '../../ingest/loops';
import type { PageSettings } from '../serve';

function readSettings(): PageSettings {
  try {
    return JSON.parse(document.body.dataset.settings ?? '') as PageSettings;
  } catch {
    // A page served without them (an older server): the service's defaults.
    return { loopThresholds: DEFAULT_LOOP_THRESHOLDS };
  }
}

export const pageSettings: PageSettings = readSettings();
export type { LoopThresholds };
