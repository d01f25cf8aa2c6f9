-- The rollup keeper adds about six marks a holder it recomputes (0020), and each also went into
-- a second index by holder, which only an erasure read. An erasure now finds a holder's marks from
-- the rows kept for them (rollup_holders: the marks are those rows' marks) and deletes them by key,
-- so the index goes: at a million subscribers, 864 MB, and a quarter of the keeper's write.
DROP INDEX rollup_marks_by_holder;
