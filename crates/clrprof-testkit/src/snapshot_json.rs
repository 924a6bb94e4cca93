//! The JSON form of insta snapshots shared by the analysis and export tests.

use serde_json::Value;

/// JSON for snapshots: keys sorted (whatever serde_json's features), one line per
/// object member or array element, except that objects and arrays of scalars stay on
/// one line.
pub fn snapshot_json(v: &Value) -> String {
    fn flat(v: &Value) -> bool {
        match v {
            Value::Array(a) => a.iter().all(|x| !x.is_array() && !x.is_object()),
            Value::Object(o) => o.values().all(|x| !x.is_array() && !x.is_object()),
            _ => true,
        }
    }
    fn inline(v: &Value) -> String {
        match v {
            Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                let members: Vec<String> = keys
                    .iter()
                    .map(|k| format!("{}: {}", Value::from(k.as_str()), inline(&o[*k])))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }
            scalar => scalar.to_string(),
        }
    }
    fn go(v: &Value, indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent + 1);
        match v {
            _ if flat(v) => out.push_str(&inline(v)),
            Value::Array(a) => {
                out.push_str("[\n");
                for (i, x) in a.iter().enumerate() {
                    out.push_str(&pad);
                    go(x, indent + 1, out);
                    out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}]", "  ".repeat(indent)));
            }
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                out.push_str("{\n");
                for (i, k) in keys.iter().enumerate() {
                    out.push_str(&format!("{pad}{}: ", Value::from(k.as_str())));
                    go(&o[*k], indent + 1, out);
                    out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}}}", "  ".repeat(indent)));
            }
            _ => unreachable!("scalars are flat"),
        }
    }
    let mut out = String::new();
    go(v, 0, &mut out);
    out
}
