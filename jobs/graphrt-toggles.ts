/**
 * graphrt's toggles and hello features (native/PROTOCOL.md "Requests" and "Lines"): the one
 * spelling in TypeScript. The spec schema, the request builder, the protocol mirror and the
 * preflight's hello check all read these lists; they are stated in jobs/rank-protocol-constants.ts.
 */
import { GRAPHRT_FEATURE_NAMES, GRAPHRT_TOGGLE_NAMES } from './rank-protocol-constants.ts';

export const GRAPHRT_TOGGLES = GRAPHRT_TOGGLE_NAMES;
export type GraphrtToggle = (typeof GRAPHRT_TOGGLES)[number];

/** The keys of hello's `features`: what this build can do on this backend. */
export const GRAPHRT_FEATURES = GRAPHRT_FEATURE_NAMES;
export type GraphrtFeature = (typeof GRAPHRT_FEATURES)[number];
