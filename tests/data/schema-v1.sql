-- A zeroday database as schema version 1 wrote it, with data in it.
CREATE TABLE trees (  id INTEGER PRIMARY KEY,  name TEXT NOT NULL UNIQUE,  url TEXT NOT NULL,  policy TEXT NOT NULL CHECK (policy IN ('rebasable', 'non-rebasable')),  branches TEXT NOT NULL DEFAULT '*',  blacklist TEXT NOT NULL DEFAULT '',  base TEXT,  created INTEGER NOT NULL,  last_poll INTEGER NOT NULL DEFAULT 0,  last_error TEXT);
CREATE TABLE branches (  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  name TEXT NOT NULL,  head TEXT NOT NULL,  state TEXT NOT NULL,  reason TEXT,  updated INTEGER NOT NULL,  PRIMARY KEY (tree_id, name));
CREATE TABLE head_events (  id INTEGER PRIMARY KEY,  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  branch TEXT NOT NULL,  old_head TEXT,  new_head TEXT,  change TEXT NOT NULL,  action TEXT NOT NULL,  reason TEXT,  selected INTEGER NOT NULL DEFAULT 0,  at INTEGER NOT NULL);
CREATE TABLE tests (  tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,  commit_id TEXT NOT NULL,  branch TEXT NOT NULL,  summary TEXT NOT NULL DEFAULT '',  event_id INTEGER REFERENCES head_events(id) ON DELETE SET NULL,  state TEXT NOT NULL DEFAULT 'pending',  queued INTEGER NOT NULL,  PRIMARY KEY (tree_id, commit_id));
INSERT INTO trees (id, name, url, policy, branches, blacklist, base, created, last_poll)
  VALUES (1, 'linux-next', 'git://example.org/linux-next.git', 'non-rebasable', 'master', 'tmp-*', 'mainline/master', 1700000000, 1700000100);
INSERT INTO branches VALUES (1, 'master', '1111111111111111111111111111111111111111', 'tested', NULL, 1700000100);
INSERT INTO head_events (tree_id, branch, old_head, new_head, change, action, selected, at)
  VALUES (1, 'master', NULL, '1111111111111111111111111111111111111111', 'new', 'queued', 1, 1700000100);
INSERT INTO tests VALUES (1, '1111111111111111111111111111111111111111', 'master', 'first', 1, 'pending', 1700000100);
PRAGMA user_version = 1;
