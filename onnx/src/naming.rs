//! Names for the axes of the model's inputs, where the positions say nothing: a symbolic dim
//! (`dim_param`) is one axis wherever its name appears, bound at call time; an input a
//! convolution or pool reads is `N`, `C` and its spatial axes (`D`, `H`, `W`) with their roles;
//! any other dim is named after its input and position.
//!
//! Every other axis is made by an op (a convolution's features and windows, a filter's own
//! axes) or is one of these, relabelled onto an operand it pairs with (`broadcast.rs`), so the
//! names of the inputs are the names the dumps show.

use onnx_protobuf::GraphProto;
use std::collections::{HashMap, HashSet};
use weft_ir::{Axis, AxisId, Graph, Role};

/// Unique axis names: the first axis of a kind gets its letter (`K`), later ones a number
/// (`K1`, `K2`), so dumps need no `@` tags to tell them apart.
#[derive(Default)]
pub struct Namer {
    used: HashMap<String, usize>,
    renamed: HashSet<AxisId>,
}

impl Namer {
    /// A name starting with `base` that no earlier call returned.
    pub fn unique(&mut self, base: &str) -> String {
        let n = self.used.entry(base.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 {
            return base.to_string();
        }
        let sep = if base.ends_with(|c: char| c.is_ascii_digit()) {
            "_"
        } else {
            ""
        };
        let name = format!("{base}{sep}{}", *n - 1);
        // A numbered name may itself be a base someone asks for later.
        self.used.entry(name.clone()).or_insert(1);
        name
    }

    /// Gives a derived axis (a convolution's output channels or windows) a short name of its
    /// own, once.
    pub fn name_derived(&mut self, g: &mut Graph, a: Axis, base: &str) {
        if self.renamed.insert(a.id) {
            let name = self.unique(base);
            g.rename_axis(a.id, &name);
        }
    }
}

/// The spatial roles of a convolution's input by spatial rank, outermost first.
pub fn spatial_roles(n: usize) -> &'static [(Role, &'static str)] {
    const R3: &[(Role, &str)] = &[(Role::Depth, "D"), (Role::Height, "H"), (Role::Width, "W")];
    match n {
        1 => &R3[2..],
        2 => &R3[1..],
        3 => R3,
        _ => &[],
    }
}

/// The axes given to the model's inputs.
pub struct InputAxes {
    /// Inputs read as a convolution's or pool's data (input 0 of those ops).
    image_inputs: Vec<String>,
    symbolic: HashMap<String, Axis>,
}

impl InputAxes {
    /// Reads which inputs feed convolutions and pools.
    pub fn new(graph: &GraphProto) -> InputAxes {
        let image_ops = [
            "Conv",
            "MaxPool",
            "AveragePool",
            "GlobalAveragePool",
            "GlobalMaxPool",
            "BatchNormalization",
            "LRN",
        ];
        let image_inputs = graph
            .node
            .iter()
            .filter(|n| image_ops.contains(&n.op_type.as_str()))
            .filter_map(|n| n.input.first().cloned())
            .collect();
        InputAxes {
            image_inputs,
            symbolic: HashMap::new(),
        }
    }

    /// The axes of input `name` with `dims` (`Err(param)`: symbolic).
    pub fn axes(
        &mut self,
        g: &mut Graph,
        namer: &mut Namer,
        name: &str,
        dims: &[Result<usize, String>],
    ) -> Vec<Axis> {
        let image = self.image_inputs.iter().any(|i| i == name) && dims.len() >= 3;
        let spatial = spatial_roles(dims.len().saturating_sub(2));
        let image = image && !spatial.is_empty();
        let mut out: Vec<Axis> = Vec::with_capacity(dims.len());
        for (i, d) in dims.iter().enumerate() {
            let a = {
                let (label, roles) = if image {
                    match i {
                        0 => ("N".to_string(), vec![]),
                        1 => ("C".to_string(), vec![Role::Channel]),
                        _ => {
                            let (role, n) = &spatial[i - 2];
                            (n.to_string(), vec![role.clone()])
                        }
                    }
                } else {
                    (format!("{name}_{i}"), vec![])
                };
                match d {
                    Ok(len) => g.axis_labelled(&namer.unique(&label), Some(*len), roles),
                    Err(param) => match self.symbolic.get(param) {
                        // One name, one axis, across inputs; twice in one input is two dims.
                        Some(a) if !out.contains(a) => *a,
                        Some(_) => g.axis_labelled(param, None, roles),
                        None => {
                            // A declared name, so `--bind param=LEN` finds it.
                            let a = g
                                .axis_with_roles(param, None, roles.clone())
                                .unwrap_or_else(|_| g.axis_labelled(param, None, roles));
                            self.symbolic.insert(param.clone(), a);
                            a
                        }
                    },
                }
            };
            out.push(a);
        }
        out
    }
}
