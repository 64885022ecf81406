// The API's shapes, as the server declares them: types only (erased from the bundle), from the routes' zod schemas.
import type { z } from 'zod';
import type {
  alertEventSchema,
  alertRuleWithStateSchema,
  createRuleBody,
  draftRuleBody,
  previewResultSchema,
} from '../../alerts/schemas';
import type { profileSchema } from '../../auth/routes';
import type { errorSchema } from '../../http/errors';
import type { memberSchema, organizationSchema } from '../../orgs/routes';
import type { apiKeySchema, projectSchema } from '../../projects/routes';
import type { healthEntrySchema, summaryEntrySchema, timeseriesSchema } from '../../reports/routes';
import type { runSchema, stepOutSchema } from '../../runs/model';
import type { scoreSchema } from '../../scores/model';
import type { scoreReportEntrySchema } from '../../scores/routes';
import type { sessionSchema } from '../../sessions/routes';
import type { usageSchema } from '../../usage/routes';

export type Profile = z.output<typeof profileSchema>;
export type Organization = z.output<typeof organizationSchema>;
export type Member = z.output<typeof memberSchema>;
export type Project = z.output<typeof projectSchema>;
export type ApiKey = z.output<typeof apiKeySchema>;
export type NewApiKey = ApiKey & { key: string };
export type SummaryEntry = z.output<typeof summaryEntrySchema>;
export type Summary = { current: SummaryEntry; previous: SummaryEntry };
export type HealthEntry = z.output<typeof healthEntrySchema>;
export type Timeseries = z.output<typeof timeseriesSchema>;
export type Run = z.output<typeof runSchema>;
export type Step = z.output<typeof stepOutSchema>;
export type AlertRule = z.output<typeof alertRuleWithStateSchema>;
export type AlertEvent = z.output<typeof alertEventSchema>;
export type RuleInput = z.input<typeof createRuleBody>;
export type DraftRule = z.input<typeof draftRuleBody>;
export type Preview = z.output<typeof previewResultSchema>;
export type ErrorBody = z.output<typeof errorSchema>;
export type Usage = z.output<typeof usageSchema>;
export type UsageGroup = Usage['groups'][number];
export type Session = z.output<typeof sessionSchema>;
export type Score = z.output<typeof scoreSchema>;
export type ScoreReportEntry = z.output<typeof scoreReportEntrySchema>;
