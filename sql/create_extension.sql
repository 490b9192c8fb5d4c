-- CREATE EXTENSION in a server that preloads stoatflow: the schema, its functions, the settings.
CREATE EXTENSION stoatflow;
SELECT stoatflow.version();
SELECT extversion, extrelocatable, extnamespace::regnamespace AS schema
  FROM pg_extension WHERE extname = 'stoatflow';
SELECT p.oid::regprocedure AS function
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'stoatflow'
 ORDER BY p.oid::regprocedure::text;
-- the library and the install script agree on the version
SELECT stoatflow.version() = extversion AS versions_match
  FROM pg_extension WHERE extname = 'stoatflow';

-- settings: defaults, units, and who may change them
SHOW stoatflow.commit_interval;
SHOW stoatflow.database;
SELECT name, setting, unit, context, vartype, min_val, max_val
  FROM pg_settings WHERE name LIKE 'stoatflow.%' ORDER BY name;
SET stoatflow.commit_interval = '5s';
SET stoatflow.database = 'other';
-- the stoatflow. prefix is reserved: a typo is an error, not a silent placeholder
SET stoatflow.comit_interval = '5s';

-- the testing tools are not granted to PUBLIC
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public_can_execute
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'stoatflow' AND p.proname LIKE '\_test\_%'
 ORDER BY 1;

-- twice is an error; IF NOT EXISTS is not
CREATE EXTENSION stoatflow;
CREATE EXTENSION IF NOT EXISTS stoatflow;
