//! Protocol options by their scenario-file names: switching a fix option on by name, asking
//! whether one is on, and the one-line name of the behaviour a campaign ran. The names are the
//! options' serde names, so this lives where the file formats do, not in the model.

use shardsim_core::protocol::settings::ProtocolOptions;

/// [`ProtocolOptions`] read and written by option name.
pub trait OptionsByName: Sized {
    /// These options with the fix option `name` switched on (a name of
    /// [`ProtocolOptions::fix_names`], as in scenario files), or `None` when `name` is not a
    /// fix option. Used to classify a known hazard's failing seed: the same seed re-run with
    /// the hazard's fix.
    fn with_fix(&self, name: &str) -> Option<Self>;
    /// Whether the fix option `name` is on (`None` when it is not a fix option).
    fn fix_on(&self, name: &str) -> Option<bool>;
    /// What a campaign ran, in one line: "Akka's behaviour" when every option is at its
    /// default, else the fix options switched on, the pre-fix behaviours selected and the
    /// mutation, by their scenario-file names.
    fn behaviour(&self) -> String;
}

impl OptionsByName for ProtocolOptions {
    fn with_fix(&self, name: &str) -> Option<Self> {
        if !ProtocolOptions::fix_names().contains(&name) {
            return None;
        }
        let mut v = serde_json::to_value(self).ok()?;
        *v.get_mut(name)? = serde_json::Value::Bool(true);
        serde_json::from_value(v).ok()
    }

    fn fix_on(&self, name: &str) -> Option<bool> {
        if !ProtocolOptions::fix_names().contains(&name) {
            return None;
        }
        serde_json::to_value(self).ok()?.get(name)?.as_bool()
    }

    fn behaviour(&self) -> String {
        let (Ok(serde_json::Value::Object(mine)), Ok(serde_json::Value::Object(default))) = (
            serde_json::to_value(self),
            serde_json::to_value(ProtocolOptions::default()),
        ) else {
            return "unknown".into();
        };
        let (mut fixes, mut pre_fix, mut mutation) = (Vec::new(), Vec::new(), None);
        for (k, v) in &mine {
            if default.get(k) == Some(v) {
                continue;
            }
            if k == "mutation" {
                mutation = Some(v.as_str().unwrap_or("?").to_string());
            } else if ProtocolOptions::fix_names().contains(&k.as_str()) {
                fixes.push(k.as_str());
            } else {
                pre_fix.push(k.as_str());
            }
        }
        let mut parts = Vec::new();
        if !fixes.is_empty() {
            parts.push(format!("fix options on: {}", fixes.join(", ")));
        }
        if !pre_fix.is_empty() {
            parts.push(format!("pre-fix behaviour: {}", pre_fix.join(", ")));
        }
        if let Some(m) = mutation {
            parts.push(format!("deliberately broken: mutation {m}"));
        }
        if parts.is_empty() {
            "Akka's behaviour (every option at its default)".into()
        } else {
            format!("Akka's behaviour except {}", parts.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardsim_core::protocol::settings::Mutation;

    #[test]
    fn behaviour_names_fixes_pre_fixes_and_mutations() {
        assert_eq!(
            ProtocolOptions::default().behaviour(),
            "Akka's behaviour (every option at its default)"
        );
        let o = ProtocolOptions {
            handoff_ack_via_owner: true,
            host_shard_acked_while_stopping: true,
            mutation: Mutation::BufferDuplicate,
            ..Default::default()
        };
        assert_eq!(
            o.behaviour(),
            "Akka's behaviour except fix options on: handoff-ack-via-owner; pre-fix behaviour: \
             host-shard-acked-while-stopping; deliberately broken: mutation buffer-duplicate"
        );
        // Every fix option is a real option name.
        let names = serde_json::to_value(ProtocolOptions::default()).expect("serialises");
        for f in ProtocolOptions::fix_names() {
            assert!(names.get(f).is_some(), "{f}");
        }
    }

    #[test]
    fn with_fix_switches_exactly_one_fix_on() {
        let d = ProtocolOptions::default();
        for f in ProtocolOptions::fix_names() {
            let o = d.with_fix(f).expect("a fix option");
            assert_eq!(o.fix_on(f), Some(true), "{f}");
            assert_eq!(d.fix_on(f), Some(false), "{f}");
            assert_eq!(
                o.behaviour(),
                format!("Akka's behaviour except fix options on: {f}")
            );
        }
        assert_eq!(d.with_fix("mutation"), None);
        assert_eq!(d.with_fix("no-such-option"), None);
        assert_eq!(d.fix_on("host-shard-acked-while-stopping"), None);
    }
}
