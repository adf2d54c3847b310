/** The significance level of every report and of a sequential experiment's looks: two-sided, CIs at 1 − alpha. */
export const DEFAULT_ALPHA = 0.05;
