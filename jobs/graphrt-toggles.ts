/**
 * graphrt's toggles and hello features (native/PROTOCOL.md "Requests" and "Lines"): the one
 * spelling in TypeScript. The spec schema, the request builder, the protocol mirror and the
 * preflight's hello check all read these lists.
 */
export const GRAPHRT_TOGGLES = ['graph', 'pdl', 'overlap', 'split_combine', 'pin', 'freeze_pointer', 'lazy_init', 'allreduce'] as const;
export type GraphrtToggle = (typeof GRAPHRT_TOGGLES)[number];

/** The keys of hello's `features`: what this build can do on this backend. */
export const GRAPHRT_FEATURES = ['graph', 'pdl', 'overlap', 'collectives'] as const;
export type GraphrtFeature = (typeof GRAPHRT_FEATURES)[number];
