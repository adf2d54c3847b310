// Types of dist-state.mjs (plain JavaScript: bin/orch.mjs loads it before tsx is registered).
export declare const ROOT: string;
export declare const DIST: string;
export declare const BUILD_INFO: string;
export declare function distState(dist?: string, root?: string): { fresh: true; main: string } | { fresh: false; reason: string };
