/** The Trace Event Format (JSON object form) as the tests check `orch trace`'s output. */
import { z } from 'zod';

const common = {
  name: z.string().min(1),
  ts: z.number().min(0),
  pid: z.int().positive(),
  tid: z.int().min(0),
  cat: z.string().optional(),
  args: z.record(z.string(), z.unknown()).optional(),
};

export const TraceEventSchema = z.discriminatedUnion('ph', [
  z.strictObject({ ...common, ph: z.literal('X'), dur: z.number().min(0) }),
  z.strictObject({ ...common, ph: z.literal('i'), s: z.enum(['g', 'p', 't']) }),
  z.strictObject({ ...common, ph: z.literal('C'), args: z.record(z.string(), z.number()) }),
  z.strictObject({
    ...common,
    ph: z.literal('M'),
    name: z.enum(['process_name', 'thread_name']),
    args: z.strictObject({ name: z.string().min(1) }),
  }),
]);

export const ChromeTraceSchema = z.strictObject({
  traceEvents: z.array(TraceEventSchema).min(1),
  displayTimeUnit: z.enum(['ms', 'ns']),
  otherData: z.record(z.string(), z.string()),
});
