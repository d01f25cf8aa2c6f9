-- Where a drill-down finds who makes a figure: see Migrations/0020_rollup_marks.sql.
CREATE TABLE rollup_marks (
    environment TEXT NOT NULL,
    family TEXT NOT NULL CHECK (family IN ('f', 's', 'c')),
    day BIGINT NOT NULL,
    app_user_id TEXT NOT NULL,
    PRIMARY KEY (environment, family, day, app_user_id)
);
CREATE INDEX rollup_marks_by_holder ON rollup_marks (app_user_id);
