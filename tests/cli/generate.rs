//! A deterministic synthetic GitOps repository of N services for tests that need size (crash
//! safety): the layout of the seed before migration — catalog over a random DAG, `-db` leaves,
//! SOPS-shaped secrets, one extra unit, clusters/base and clusters/dev.

use crate::common::TestRepo;

/// A small linear congruential generator: tests must not depend on a crate's RNG stream.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn repository(n: usize, seed: u64) -> TestRepo {
    let repo = TestRepo::empty();
    let mut rng = Lcg(seed);
    let mut onboarded: Vec<String> = Vec::new();
    for i in 0..n {
        let name = format!("svc-{i:05}");
        let mut deps: Vec<String> = Vec::new();
        for _ in 0..rng.below(4) {
            if onboarded.is_empty() {
                break;
            }
            let d = onboarded[rng.below(onboarded.len() as u64) as usize].clone();
            if !deps.contains(&d) {
                deps.push(d);
            }
        }
        let db = rng.below(7) == 0;
        if db {
            deps.push(format!("{name}-db"));
        }
        let dep_refs: Vec<&str> = deps.iter().map(String::as_str).collect();
        repo.service(&name, &dep_refs);
        if rng.below(20) == 0 {
            continue; // not onboarded: no manifest, never a dependency target
        }
        repo.manifest(&format!("apps/{name}.yaml"));
        if rng.below(3) == 0 {
            repo.write(
                &format!("apps/{name}-bootstrap-secret.sops.yaml"),
                &sops_secret(&format!("{name}-bootstrap-secret"), &mut rng),
            );
        }
        if db {
            repo.manifest(&format!("apps/{name}-db.yaml"));
            repo.write(
                &format!("apps/{name}-db-app.sops.yaml"),
                &sops_secret(&format!("{name}-db-app"), &mut rng),
            );
        }
        onboarded.push(name);
    }
    let anchor = onboarded
        .first()
        .cloned()
        .unwrap_or_else(|| "svc-00000".into());
    repo.write(
        "fluxwave.yaml",
        &format!("units:\n  - name: {anchor}-actions\n    anchor: {anchor}\n    above: true\n"),
    );
    repo.manifest(&format!("apps/{anchor}-actions.yaml"));
    repo.write(
        &format!("apps/{anchor}-actions-runner-secret.sops.yaml"),
        &sops_secret("runner", &mut rng),
    );
    repo.flat_kustomization().flux_wiring();
    repo
}

fn sops_secret(name: &str, rng: &mut Lcg) -> String {
    let blob: String = (0..48)
        .map(|_| char::from(b'A' + rng.below(26) as u8))
        .collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n    name: {name}\n    namespace: default\ndata:\n    value: ENC[AES256_GCM,data:{blob},iv:aaaa,tag:bbbb,type:str]\nsops:\n    mac: ENC[AES256_GCM,data:{blob},iv:cccc,tag:dddd,type:str]\n    version: 3.8.1\n"
    )
}
