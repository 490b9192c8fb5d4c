-- The extension's objects described as text, one line each, sorted: its members; functions with
-- their arguments, result, body (md5), settings, security and ACL; tables, views, types and their
-- columns; constraints, indexes, triggers, comments, schemas and extconfig. Two databases with
-- equal descriptions have the same extension: test/upgrade/run.sh compares a 0.1 deployment
-- upgraded to 0.2 with a fresh 0.2 install, sql/install_script.sql the two install paths.
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'stoatflow'),
members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (SELECT c.oid FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
         UNION  -- composite types (the "window" type): their attributes
         SELECT t.typrelid FROM pg_type t JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
          WHERE t.typrelid <> 0),
lines AS (
  SELECT 'member ' || pg_describe_object(m.classid, m.objid, 0) AS line FROM members m
  UNION ALL
  SELECT format('function %s.%s(%s) returns %s; lang %s; kind %s; volatile %s; strict %s; secdef %s; leakproof %s; parallel %s; config %s; acl %s; owner %s; bin %s; src md5 %s',
                p.pronamespace::regnamespace, p.proname, pg_get_function_identity_arguments(p.oid),
                pg_get_function_result(p.oid), l.lanname, p.prokind, p.provolatile, p.proisstrict,
                p.prosecdef, p.proleakproof, p.proparallel, p.proconfig, p.proacl, p.proowner::regrole,
                p.probin, md5(p.prosrc))
    FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
    JOIN pg_language l ON l.oid = p.prolang
  UNION ALL
  SELECT format('function %s.%s(%s) arguments: %s', p.pronamespace::regnamespace, p.proname,
                pg_get_function_identity_arguments(p.oid), pg_get_function_arguments(p.oid))
    FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
  UNION ALL
  SELECT format('relation %s kind %s; options %s; acl %s; owner %s', c.oid::regclass, c.relkind,
                c.reloptions, c.relacl, c.relowner::regrole)
    FROM pg_class c JOIN rels r ON r.oid = c.oid
  UNION ALL
  SELECT format('column %s.%s #%s %s; not null %s; default %s; dropped %s; acl %s', a.attrelid::regclass,
                a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                pg_get_expr(ad.adbin, ad.adrelid), a.attisdropped, a.attacl)
    FROM pg_attribute a JOIN rels r ON r.oid = a.attrelid
    LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
   WHERE a.attnum > 0
  UNION ALL
  SELECT format('view %s: %s', c.oid::regclass, md5(pg_get_viewdef(c.oid)))
    FROM pg_class c JOIN rels r ON r.oid = c.oid WHERE c.relkind IN ('v', 'm')
  UNION ALL
  SELECT format('constraint %s on %s: %s', co.conname, co.conrelid::regclass, pg_get_constraintdef(co.oid))
    FROM pg_constraint co JOIN rels r ON r.oid = co.conrelid
  UNION ALL
  SELECT format('index %s on %s: %s', i.indexrelid::regclass, i.indrelid::regclass, pg_get_indexdef(i.indexrelid))
    FROM pg_index i JOIN rels r ON r.oid = i.indrelid
  UNION ALL
  SELECT format('trigger %s on %s: %s', t.tgname, t.tgrelid::regclass, pg_get_triggerdef(t.oid))
    FROM pg_trigger t JOIN rels r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
  UNION ALL
  SELECT format('comment on %s: %s', pg_describe_object(m.classid, m.objid, 0), md5(ds.description))
    FROM members m JOIN pg_description ds ON ds.classoid = m.classid AND ds.objoid = m.objid AND ds.objsubid = 0
  UNION ALL
  SELECT format('type %s kind %s; acl %s', t.oid::regtype, t.typtype, t.typacl)
    FROM pg_type t JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
  UNION ALL
  SELECT format('schema %s acl %s owner %s', n.nspname, n.nspacl, n.nspowner::regrole)
    FROM pg_namespace n WHERE n.nspname LIKE 'stoatflow%'
  UNION ALL
  SELECT format('extension %s relocatable %s schema %s config %s condition %s', e.extname,
                e.extrelocatable, e.extnamespace::regnamespace,
                (SELECT array_agg(x::regclass::text ORDER BY x::regclass::text) FROM unnest(e.extconfig) x),
                e.extcondition)
    FROM pg_extension e WHERE e.extname = 'stoatflow'
)
SELECT line FROM lines ORDER BY line COLLATE "C";
