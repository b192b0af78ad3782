/** The path of the bundled `koma-sim` binary (a deterministic stand-in for `koma`). */
export declare const simPath: string;
