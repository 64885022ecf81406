ALTER TABLE runs ON CLUSTER runwatch MODIFY SETTING materialize_projections_on_insert = 0, materialize_projections_on_merge = 1;
