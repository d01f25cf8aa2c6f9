-- Chart rollups (Docs/analytics.md#rollups), kept by the rollup keeper from the change log.
-- One row says what they were built for and how far they are: `fingerprint` names the settings,
-- the loaded rates' revision and the rollup format; `phase` is `building` while a rebuild goes
-- holder by holder (`rebuild_after`: the last holder done) and `ready` after; `changes_through` is the
-- last change of the change log they include. `rates_revision` grows with each rates import that
-- changed a rate, so the keeper knows to rebuild.
CREATE TABLE rollup_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL,
    phase TEXT NOT NULL CHECK (phase IN ('building', 'ready')),
    rebuild_after TEXT,
    changes_through INTEGER NOT NULL,
    rates_revision INTEGER NOT NULL
) STRICT;
INSERT INTO rollup_state (id, fingerprint, phase, rebuild_after, changes_through, rates_revision) VALUES (1, '', 'building', NULL, 0, 0);

-- What each holder adds to the sums, as the keeper last computed it (Analytics.RollupRow,
-- encoded and compressed): taken away again when their facts change.
CREATE TABLE rollup_holders (
    app_user_id TEXT PRIMARY KEY,
    rows TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Every holder's items summed by their UTC days (Analytics.RollupRow); `settled` (0 or 1): the
-- items had begun when written, so `at_day` never depends on the hour. `cohort_day` is
-- -9223372036854775808 for an item of no cohort; unbounded windows keep the extreme integers.
CREATE TABLE rollup_days (
    environment TEXT NOT NULL,
    chart TEXT NOT NULL,
    measure TEXT NOT NULL,
    kind TEXT NOT NULL,
    settled INTEGER NOT NULL,
    bundle_id TEXT NOT NULL,
    store TEXT NOT NULL,
    note TEXT NOT NULL,
    at_day INTEGER NOT NULL,
    until_day INTEGER NOT NULL,
    valid_from_day INTEGER NOT NULL,
    valid_until_day INTEGER NOT NULL,
    cohort_day INTEGER NOT NULL,
    value INTEGER NOT NULL,
    items INTEGER NOT NULL,
    PRIMARY KEY (
        environment, chart, measure, kind, settled, bundle_id, store, note, at_day, until_day, valid_from_day,
        valid_until_day, cohort_day
    )
) STRICT, WITHOUT ROWID;

-- Items kept exactly for each day they have an instant on, from the day they were written
-- (Analytics.RollupMoment): today's figures are summed from these. Past days are pruned.
CREATE TABLE rollup_moments (
    day INTEGER NOT NULL,
    environment TEXT NOT NULL,
    chart TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    measure TEXT NOT NULL,
    kind TEXT NOT NULL,
    bundle_id TEXT NOT NULL,
    store TEXT NOT NULL,
    notes TEXT NOT NULL,
    at INTEGER NOT NULL,
    until INTEGER NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER NOT NULL,
    cohort INTEGER,
    value INTEGER NOT NULL
) STRICT;
CREATE INDEX rollup_moments_by_day ON rollup_moments (day, environment, chart);
CREATE INDEX rollup_moments_by_holder ON rollup_moments (app_user_id);
