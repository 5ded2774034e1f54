//! Strongly connected components of a directed graph given as successor lists (Tarjan's
//! algorithm, iterative so that a chain of 100,000 nodes cannot overflow the stack): the
//! `dependsOn` graphs that `check` searches for cycles and that `blast` walks.

/// Each node's component and how many there are. Components are numbered in the order
/// found, so a component's number is above that of every component it reaches. `to` gives
/// the node an edge leads to.
pub(crate) fn components<E>(next: &[Vec<E>], to: impl Fn(&E) -> usize) -> (Vec<usize>, usize) {
    let n = next.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let mut component = vec![usize::MAX; n];
    let (mut counter, mut components) = (0, 0);
    let mut stack = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call = vec![(root, 0)];
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if let Some(edge) = next[v].get(*i) {
                let w = to(edge);
                *i += 1;
                if index[w] == usize::MAX {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = components;
                    if w == v {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    (component, components)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_one_component_numbered_after_what_it_reaches() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3; 4 alone.
        let next = vec![vec![1], vec![2], vec![1, 3], vec![], vec![]];
        let (c, count) = components(&next, |&w| w);
        assert_eq!(count, 4);
        assert_eq!(c[1], c[2]);
        assert!(c[0] > c[1] && c[1] > c[3]);
        let chain: Vec<Vec<usize>> = (0..100_000).map(|i| vec![i + 1]).chain([vec![]]).collect();
        assert_eq!(components(&chain, |&w| w).1, 100_001);
    }
}
