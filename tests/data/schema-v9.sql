-- A zeroday database as schema version 9 wrote it (its .schema), with findings in it.
CREATE TABLE trees (  id INTEGER PRIMARY KEY,  name TEXT NOT NULL UNIQUE,  url TEXT NOT NULL,  policy TEXT NOT NULL CHECK (policy IN ('rebasable', 'non-rebasable')),  branches TEXT NOT NULL DEFAULT '*',  blacklist TEXT NOT NULL DEFAULT '',  base TEXT,  created INTEGER NOT NULL,  last_poll INTEGER NOT NULL DEFAULT 0,  last_error TEXT, recipients TEXT NOT NULL DEFAULT '', targets TEXT NOT NULL DEFAULT '');
CREATE TABLE branches (  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  name TEXT NOT NULL,  head TEXT NOT NULL,  state TEXT NOT NULL,  reason TEXT,  updated INTEGER NOT NULL,  PRIMARY KEY (tree_id, name));
CREATE TABLE head_events (  id INTEGER PRIMARY KEY,  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  branch TEXT NOT NULL,  old_head TEXT,  new_head TEXT,  change TEXT NOT NULL,  action TEXT NOT NULL,  reason TEXT,  selected INTEGER NOT NULL DEFAULT 0,  at INTEGER NOT NULL);
CREATE TABLE tests (  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  commit_id TEXT NOT NULL,  branch TEXT NOT NULL,  summary TEXT NOT NULL DEFAULT '',  event_id INTEGER REFERENCES head_events(id) ON DELETE SET NULL,  state TEXT NOT NULL DEFAULT 'pending',  queued INTEGER NOT NULL,  PRIMARY KEY (tree_id, commit_id));
CREATE INDEX tests_by_state ON tests(state, queued);
CREATE INDEX head_events_by_time ON head_events(at);
CREATE TABLE builds (  id INTEGER PRIMARY KEY,  source TEXT NOT NULL,  commit_id TEXT NOT NULL,  target TEXT NOT NULL,  status TEXT NOT NULL,  reason TEXT,  seconds REAL NOT NULL,  log_path TEXT,  config_path TEXT,  created INTEGER NOT NULL, image_path TEXT);
CREATE INDEX builds_by_commit ON builds(source, commit_id, target);
CREATE TABLE diagnostics (  build_id INTEGER NOT NULL REFERENCES builds(id) ON DELETE CASCADE,  seq INTEGER NOT NULL,  kind TEXT NOT NULL,  checker TEXT NOT NULL,  file TEXT NOT NULL,  line INTEGER NOT NULL,  col INTEGER NOT NULL,  function TEXT,  message TEXT NOT NULL,  fingerprint TEXT NOT NULL,  PRIMARY KEY (build_id, seq));
CREATE TABLE verdicts (  build_id INTEGER PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,  parent_build_id INTEGER REFERENCES builds(id) ON DELETE SET NULL,  verdict TEXT NOT NULL,  new_seqs TEXT NOT NULL DEFAULT '');
CREATE TABLE boots (  id INTEGER PRIMARY KEY,  build_id INTEGER REFERENCES builds(id) ON DELETE SET NULL,  image TEXT NOT NULL,  host TEXT NOT NULL,  seed INTEGER NOT NULL,  kind TEXT NOT NULL,  title TEXT NOT NULL,  fingerprint TEXT NOT NULL,  console_path TEXT,  seconds REAL NOT NULL,  attempts INTEGER NOT NULL,  created INTEGER NOT NULL, profile TEXT, excerpt TEXT);
CREATE TABLE jobs (  id INTEGER PRIMARY KEY,  kind TEXT NOT NULL,  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  commit_id TEXT NOT NULL,  target TEXT NOT NULL,  priority INTEGER NOT NULL,  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),  lease_owner TEXT,  lease_until INTEGER,  claimed INTEGER,  attempts INTEGER NOT NULL DEFAULT 0,  result TEXT,  created INTEGER NOT NULL,  finished INTEGER, failures INTEGER NOT NULL DEFAULT 0, last_error TEXT, not_before INTEGER NOT NULL DEFAULT 0,  UNIQUE (kind, tree_id, commit_id, target));
CREATE INDEX jobs_by_state ON jobs(state, priority);
CREATE TABLE findings (  id INTEGER PRIMARY KEY,  tree_id INTEGER REFERENCES trees(id) ON DELETE CASCADE,  branch TEXT,  culprit TEXT NOT NULL,  target TEXT NOT NULL,  kind TEXT NOT NULL,  fingerprint TEXT NOT NULL,  title TEXT NOT NULL,  details TEXT,  confidence REAL NOT NULL,  state TEXT NOT NULL DEFAULT 'open',  reproduce TEXT,  created INTEGER NOT NULL, fixed_by TEXT, rate REAL NOT NULL DEFAULT 1.0, bisect_log TEXT,  UNIQUE (culprit, fingerprint));
CREATE INDEX boots_by_build ON boots(build_id, profile);
INSERT INTO trees (id, name, url, policy, branches, created, last_poll)
  VALUES (1, 'mainline', 'git://example.org/linux.git', 'non-rebasable', 'master', 1700000000, 1700000100);
INSERT INTO findings (id, tree_id, branch, culprit, target, kind, fingerprint, title, details, confidence, state, reproduce, created, fixed_by, rate, bisect_log)
  VALUES (1, 1, 'master', '1111111111111111111111111111111111111111', 'x86_64:defconfig', 'build-warning', '0123456789abcdef', 'fs/a.c: unused variable ''x''', 'fs/a.c:3:7: warning: unused variable ''x''', 1.0, 'open', 'zeroday build mainline 1111111111111111111111111111111111111111 --target ''x86_64:defconfig''', 1700000200, NULL, 1.0, '0000000000000000000000000000000000000000 good (parent)
1111111111111111111111111111111111111111 bad
');
INSERT INTO findings (id, tree_id, branch, culprit, target, kind, fingerprint, title, details, confidence, state, reproduce, created, fixed_by, rate, bisect_log)
  VALUES (2, 1, 'master', '2222222222222222222222222222222222222222', 'x86_64:tinyconfig+serial', 'boot-panic', 'fedcba9876543210', 'Kernel panic - not syncing: VFS', '2/4 boots at the head (intermittent)
Kernel panic - not syncing: VFS', 0.99, 'fixed', NULL, 1700000300, '3333333333333333333333333333333333333333', 0.5, NULL);
PRAGMA user_version = 9;
