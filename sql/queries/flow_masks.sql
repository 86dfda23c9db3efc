-- Named queries of engine/src/flow/flow_masks.cc: the fields each flow
-- masks wherever its bodies are shown (Flow::Builder::Masked), recorded by
-- Runner::Open for the operator's tools, which do not link the flows
-- (phasekey.flow_masks, sql/migrations/0001_baseline.sql).

-- name: FlowMasksRecord
-- Records the pointers of each flow in $1, a JSON object {flow: [pointer,
-- ...]} (an empty array for a flow that masks nothing), in the order given.
-- Writes only the rows that are missing or differ, so a start with the same
-- flows as the last one writes nothing; returns the flows written. Rows of
-- flows not in $1 are left as they are (another binary may run them).
INSERT INTO phasekey.flow_masks AS m (flow, pointers)
SELECT f.flow, f.pointers
FROM (SELECT e.key AS flow,
             ARRAY(SELECT p.value FROM jsonb_array_elements_text(e.value) WITH ORDINALITY AS p(value, i)
                   ORDER BY p.i) AS pointers
      FROM jsonb_each($1::jsonb) AS e) AS f
WHERE NOT EXISTS (SELECT 1 FROM phasekey.flow_masks AS old
                  WHERE old.flow = f.flow AND old.pointers = f.pointers)
ON CONFLICT (flow) DO UPDATE SET pointers = EXCLUDED.pointers, updated_at = now()
WHERE m.pointers IS DISTINCT FROM EXCLUDED.pointers
RETURNING flow;

-- name: FlowMasksLoad
-- Every flow's pointers, as a JSON array, by flow name.
SELECT flow, array_to_json(pointers)::text
FROM phasekey.flow_masks
ORDER BY flow COLLATE "C";
