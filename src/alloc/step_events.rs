//! One training step of a `GnnStepShape` as allocator requests, in the order
//! PyTorch makes them: the batch moved to the card, each layer's saved
//! tensors with its message-passing scratch between them, the parameter
//! gradients, backward layer by layer (the gradient of a layer's output,
//! its scratch, then the layer's saved tensors freed), the optimizer's state
//! at the first step, and the batch freed.

use super::trace::TraceEvent;
use super::workload::GnnStepShape;

/// The events of one step at size factor `f` (`first`: the optimizer's
/// state is created); `retained` collects the outputs kept past the step.
pub(super) fn step_events(
    shape: &GnnStepShape,
    f: f64,
    first: bool,
    next_id: &mut impl FnMut() -> u64,
    retained: &mut Vec<u64>,
) -> Vec<TraceEvent> {
    use TraceEvent::{Alloc, Free};
    let scaled = |b: u64| ((b as f64 * f).round() as u64).max(1);
    let mut ev = Vec::new();
    let mut alloc = |ev: &mut Vec<TraceEvent>, size: u64| {
        let id = next_id();
        ev.push(Alloc { id, size });
        id
    };
    let inputs: Vec<u64> = shape
        .batch_inputs
        .iter()
        .map(|&b| alloc(&mut ev, scaled(b)))
        .collect();
    // A tensor group as its parts, or as one block where none are given.
    let parts = |p: Option<&Vec<u64>>, whole: u64| -> Vec<u64> {
        match p.filter(|p| !p.is_empty()) {
            Some(p) => p.iter().map(|&b| scaled(b)).collect(),
            None => vec![scaled(whole)],
        }
    };
    // Per layer: the ids of its saved tensors and their sizes.
    let mut acts: Vec<(Vec<u64>, Vec<u64>)> = Vec::new();
    for (i, &a) in shape.saved_activations.iter().enumerate() {
        let split = shape.saved_parts.get(i).is_some_and(|p| !p.is_empty());
        let mut sizes = parts(shape.saved_parts.get(i), a);
        let mut ids: Vec<u64> = sizes.iter().map(|&b| alloc(&mut ev, b)).collect();
        if let Some(&t) = shape.transients.get(i) {
            alloc_then_free(&mut ev, &mut alloc, parts(shape.transient_parts.get(i), t));
        }
        // The parts made after the transient count only beside those before it.
        let after = shape.saved_after.get(i).filter(|_| split);
        for b in after.into_iter().flatten().map(|&b| scaled(b)) {
            ids.push(alloc(&mut ev, b));
            sizes.push(b);
        }
        acts.push((ids, sizes));
    }
    for &t in shape.transients.iter().skip(shape.saved_activations.len()) {
        let t = alloc(&mut ev, scaled(t));
        ev.push(Free { id: t });
    }
    for &r in &shape.retained_outputs {
        retained.push(alloc(&mut ev, scaled(r)));
    }
    // Backward: parameter gradients, then per layer in reverse the gradient
    // of its output (`grad_parts`, or tensors the sizes of its saved ones),
    // freeing the later layer's gradient and the layer's saved tensors.
    let grads: Vec<u64> = shape
        .param_grads
        .iter()
        .map(|&g| alloc(&mut ev, g))
        .collect();
    let mut upstream: Option<Vec<u64>> = None;
    for (i, (act, sizes)) in acts.iter().enumerate().rev() {
        let g: Vec<u64> = match shape.grad_parts.get(i).and_then(Option::as_ref) {
            Some(p) => p.iter().map(|&b| alloc(&mut ev, scaled(b))).collect(),
            None => sizes.iter().map(|&b| alloc(&mut ev, b)).collect(),
        };
        if let Some(&t) = shape.backward_transients.get(i).filter(|&&t| t > 0) {
            alloc_then_free(&mut ev, &mut alloc, parts(shape.backward_parts.get(i), t));
        }
        if let Some(u) = upstream.replace(g) {
            ev.extend(u.into_iter().map(|id| Free { id }));
        }
        ev.extend(act.iter().map(|&id| Free { id }));
    }
    if let Some(u) = upstream {
        ev.extend(u.into_iter().map(|id| Free { id }));
    }
    if first {
        for &s in &shape.optimizer_state_first_step {
            alloc(&mut ev, s);
        }
    }
    ev.extend(grads.into_iter().map(|id| Free { id }));
    ev.extend(inputs.into_iter().map(|id| Free { id }));
    ev
}

/// Allocates `sizes` one after another, then frees them in that order.
fn alloc_then_free(
    ev: &mut Vec<TraceEvent>,
    alloc: &mut impl FnMut(&mut Vec<TraceEvent>, u64) -> u64,
    sizes: Vec<u64>,
) {
    let ids: Vec<u64> = sizes.into_iter().map(|b| alloc(ev, b)).collect();
    ev.extend(ids.into_iter().map(|id| TraceEvent::Free { id }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use TraceEvent::{Alloc, Free};

    fn gat_like(grad_parts: Vec<Option<Vec<u64>>>) -> GnnStepShape {
        GnnStepShape {
            parameters: vec![],
            optimizer_state_first_step: vec![],
            batch_inputs: vec![],
            saved_activations: vec![100],
            transients: vec![50],
            backward_transients: vec![70],
            transient_parts: vec![],
            backward_parts: vec![vec![30, 40]],
            saved_parts: vec![vec![20, 60]],
            saved_after: vec![vec![20]],
            grad_parts,
            param_grads: vec![],
            retained_outputs: vec![],
            steps_per_epoch: 0,
            size_cv: 0.0,
        }
    }

    fn events(shape: &GnnStepShape) -> Vec<TraceEvent> {
        let mut id = 0;
        step_events(
            shape,
            1.0,
            false,
            &mut || {
                id += 1;
                id
            },
            &mut Vec::new(),
        )
    }

    /// A layer given as parts: those before its transient, the transient
    /// made and freed, the part after it; in backward the gradient (none
    /// here, as GAT's), the scratch, then every saved part freed. The whole
    /// figure is never one request.
    #[test]
    fn a_layers_parts_are_made_around_its_transient_and_freed_after_its_backward() {
        let ev = events(&gat_like(vec![Some(vec![])]));
        let want = vec![
            Alloc { id: 1, size: 20 },
            Alloc { id: 2, size: 60 },
            Alloc { id: 3, size: 50 }, // the transient
            Free { id: 3 },
            Alloc { id: 4, size: 20 }, // after it: the ReLU's output
            Alloc { id: 5, size: 30 }, // backward scratch, together
            Alloc { id: 6, size: 40 },
            Free { id: 5 },
            Free { id: 6 },
            Free { id: 1 },
            Free { id: 2 },
            Free { id: 4 },
        ];
        assert_eq!(ev, want);
    }

    /// Without `grad_parts` the gradient of a layer's output is tensors the
    /// sizes of its saved ones; with them, those.
    #[test]
    fn the_output_gradient_is_the_saved_parts_sizes_unless_given() {
        let sizes = |ev: &[TraceEvent]| -> Vec<u64> {
            ev.iter()
                .filter_map(|e| match e {
                    Alloc { size, .. } => Some(*size),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            sizes(&events(&gat_like(vec![]))),
            [20, 60, 50, 20, 20, 60, 20, 30, 40]
        );
        assert_eq!(
            sizes(&events(&gat_like(vec![None]))),
            [20, 60, 50, 20, 20, 60, 20, 30, 40]
        );
        assert_eq!(
            sizes(&events(&gat_like(vec![Some(vec![9])]))),
            [20, 60, 50, 20, 9, 30, 40]
        );
    }
}
