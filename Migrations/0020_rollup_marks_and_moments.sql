-- Where a drill-down finds who makes a figure (Docs/analytics.md#drill-downs), kept by the rollup
-- keeper with the rollups (Analytics.RollupMark): each holder is marked on the UTC days their flows
-- happen (`family` f), the first days of the UTC months their stocks run through (s) and the days
-- of their cohorts (c). A mark may name a holder who adds nothing to a figure; a holder who adds
-- something is never missing one. The key orders holders by day so that a drill-down reads a page
-- of them at once; the second index finds a holder's marks when they are erased.
CREATE TABLE rollup_marks (
    environment TEXT NOT NULL,
    family TEXT NOT NULL CHECK (family IN ('f', 's', 'c')),
    day INTEGER NOT NULL,
    app_user_id TEXT NOT NULL,
    PRIMARY KEY (environment, family, day, app_user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX rollup_marks_by_holder ON rollup_marks (app_user_id);

-- Today's exact items (Analytics.RollupMoment) kept one row per holder, chart and day, with all of
-- that holder's items of the chart with an instant on the day (encoded): a third as many rows to
-- read as one per item and measure. The rollup format changed with this, so they are rebuilt.
DROP TABLE rollup_moments;
CREATE TABLE rollup_moments (
    day INTEGER NOT NULL,
    environment TEXT NOT NULL,
    chart TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    items TEXT NOT NULL,
    PRIMARY KEY (day, environment, chart, app_user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX rollup_moments_by_holder ON rollup_moments (app_user_id);
