-- Where a drill-down finds who makes a figure: see Migrations/0020_rollup_marks_and_moments.sql.
CREATE TABLE rollup_marks (
    environment TEXT NOT NULL,
    family TEXT NOT NULL CHECK (family IN ('f', 's', 'c')),
    day BIGINT NOT NULL,
    app_user_id TEXT NOT NULL,
    PRIMARY KEY (environment, family, day, app_user_id)
);
CREATE INDEX rollup_marks_by_holder ON rollup_marks (app_user_id);

-- Today's exact items, one row per holder, chart and day: see Migrations/0020_rollup_marks_and_moments.sql.
DROP TABLE rollup_moments;
CREATE TABLE rollup_moments (
    day BIGINT NOT NULL,
    environment TEXT NOT NULL,
    chart TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    items TEXT NOT NULL,
    PRIMARY KEY (day, environment, chart, app_user_id)
);
CREATE INDEX rollup_moments_by_holder ON rollup_moments (app_user_id);
