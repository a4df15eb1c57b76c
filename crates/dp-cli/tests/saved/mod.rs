//! Reading a saved model's privacy event tree in the integration tests.

use serde_json::Value;

/// The releases of a saved model's `privacy` object in order (its event tree's `release`
/// nodes depth first, each with `mechanism`, `parameters`, `count` and `label`), as format 2's
/// flat ledger listed them.
pub fn releases(privacy: &Value) -> Vec<Value> {
    fn walk(node: &Value, out: &mut Vec<Value>) {
        match node["kind"].as_str() {
            Some("release") => out.push(node.clone()),
            _ => {
                if let Some(events) = node["events"].as_array() {
                    events.iter().for_each(|e| walk(e, out));
                }
                if node["event"].is_object() {
                    walk(&node["event"], out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&privacy["event"], &mut out);
    out
}
