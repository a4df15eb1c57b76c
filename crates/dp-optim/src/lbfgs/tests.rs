use super::*;
use crate::testutil::glm::{DenseGlm, Loss, newton, random_problem, ridge_closed_form, solve};
use crate::{Objective, Trace};
use ndarray::{Array2, ArrayViewMut1, array};
use proptest::prelude::*;

/// `f(x) = ½ xᵀMx − bᵀx`.
struct Quadratic {
    m: Array2<f64>,
    b: Array1<f64>,
}

impl Objective for Quadratic {
    fn dim(&self) -> usize {
        self.b.len()
    }
    fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
        0.5 * x.dot(&self.m.dot(&x)) - self.b.dot(&x)
    }
    fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
        g.assign(&(self.m.dot(&x) - &self.b));
        self.value(x)
    }
}

/// Extended Rosenbrock `Σ_{i<d/2} 100(x_{2i+1} − x_{2i}²)² + (1 − x_{2i})²`, minimum 0 at 1.
struct Rosenbrock(usize);

impl Objective for Rosenbrock {
    fn dim(&self) -> usize {
        self.0
    }
    fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
        (0..self.0 / 2)
            .map(|i| {
                let (a, b) = (x[2 * i], x[2 * i + 1]);
                100.0 * (b - a * a).powi(2) + (1.0 - a).powi(2)
            })
            .sum()
    }
    fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
        g.fill(0.0);
        for i in 0..self.0 / 2 {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            let t = b - a * a;
            g[2 * i] = -400.0 * a * t - 2.0 * (1.0 - a);
            g[2 * i + 1] = 200.0 * t;
        }
        self.value(x)
    }
}

fn norm(v: &Array1<f64>) -> f64 {
    v.dot(v).sqrt()
}

fn grad_norm<O: Objective>(f: &O, x: &Array1<f64>) -> f64 {
    let mut g = Array1::zeros(x.len());
    f.value_grad(x.view(), g.view_mut());
    norm(&g)
}

/// Quadratics with condition numbers 10 and 1e4 (log-spaced spectrum, d = 20): converged to
/// τ = 1e-10 at `M⁻¹b` (τ is reached although the decrease in `f` is far below rounding,
/// thanks to the line search's slope-based tests); the observed values never increase
/// beyond rounding (sufficient decrease).
#[test]
fn quadratic() {
    let d = 20;
    for (log_kappa, max_iters) in [(1.0, 40), (4.0, 1000)] {
        let m = Array2::from_diag(&Array1::from_shape_fn(d, |i| {
            10f64.powf(log_kappa * i as f64 / (d - 1) as f64)
        }));
        let q = Quadratic {
            m: m.clone(),
            b: Array1::from_shape_fn(d, |i| (i as f64).sin()),
        };
        let mut trace = Trace::default();
        let sol = Lbfgs::new()
            .grad_tol(1e-10)
            .max_iters(max_iters)
            .minimize(&q, Array1::zeros(d).view(), Some(&mut trace))
            .unwrap();
        assert_eq!(sol.status, Status::Converged, "kappa = 1e{log_kappa}");
        assert!(grad_norm(&q, &sol.x) <= 1e-10);
        let exact = solve(&m, &q.b);
        assert!(norm(&(&sol.x - &exact)) < 1e-10);
        assert!(
            trace
                .iterations
                .windows(2)
                .all(|w| w[1].value <= w[0].value + 1e-12 * w[0].value.abs())
        );
        assert!(sol.ledger.is_none());
    }
}

/// A constant offset of 1e8 puts every decrease below the rounding of `f` near the optimum;
/// τ = 1e-9 on the gradient is still reached.
#[test]
fn reaches_tolerance_below_value_rounding() {
    struct Offset(Quadratic);
    impl Objective for Offset {
        fn dim(&self) -> usize {
            self.0.dim()
        }
        fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
            1e8 + self.0.value(x)
        }
        fn value_grad(&self, x: ArrayView1<'_, f64>, g: ArrayViewMut1<'_, f64>) -> f64 {
            1e8 + self.0.value_grad(x, g)
        }
    }
    let m = array![[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]];
    let b = array![1.0, 2.0, 3.0];
    let exact = solve(&m, &b);
    let f = Offset(Quadratic { m, b });
    let sol = Lbfgs::new()
        .grad_tol(1e-9)
        .minimize(&f, Array1::zeros(3).view(), None)
        .unwrap();
    assert_eq!(sol.status, Status::Converged);
    assert!(norm(&(&sol.x - &exact)) < 1e-9);
}

/// Rosenbrock in 2 and 10 dimensions from the classic start, with memory 10 and 1.
#[test]
fn rosenbrock() {
    for (d, memory) in [(2, 10), (10, 10), (2, 1), (10, 3)] {
        let mut x0 = Array1::zeros(d);
        for i in 0..d / 2 {
            x0[2 * i] = -1.2;
            x0[2 * i + 1] = 1.0;
        }
        let sol = Lbfgs::new()
            .memory(memory)
            .grad_tol(1e-9)
            .max_iters(5000)
            .minimize(&Rosenbrock(d), x0.view(), None)
            .unwrap();
        assert_eq!(sol.status, Status::Converged, "d = {d}, m = {memory}");
        assert!(
            norm(&(&sol.x - &Array1::<f64>::ones(d))) < 1e-8,
            "{}",
            sol.x
        );
    }
}

/// Ridge regression against its closed form (relative error 1e-10).
#[test]
fn ridge_matches_closed_form() {
    let p = random_problem(200, 8, 3.0, Loss::Squared, 50);
    let exact = ridge_closed_form(&p);
    let sol = Lbfgs::new()
        .grad_tol(1e-9)
        .minimize(&p, Array1::zeros(8).view(), None)
        .unwrap();
    assert_eq!(sol.status, Status::Converged);
    assert!(norm(&(&sol.x - &exact)) < 1e-10 * norm(&exact));
}

/// L2-regularised logistic regression against a Newton solution computed to ‖∇f‖ ≤ 1e-12.
#[test]
fn logistic_matches_newton() {
    for (n, d, lambda, seed) in [(300, 5, 1.0, 51), (500, 10, 0.1, 52), (50, 3, 1e-2, 53)] {
        let p = random_problem(n, d, lambda, Loss::Logistic, seed);
        let reference = newton(&p);
        let g_ref = grad_norm(&p, &reference);
        assert!(g_ref < 1e-11);
        let sol = Lbfgs::new()
            .grad_tol(1e-9)
            .minimize(&p, Array1::zeros(d).view(), None)
            .unwrap();
        assert_eq!(sol.status, Status::Converged);
        // Strong convexity λ: ‖x − x*‖ ≤ ‖∇f(x)‖/λ.
        let err = norm(&(&sol.x - &reference));
        assert!(err <= 1e-9 / lambda + 1e-12, "n = {n}: {err}");
    }
}

/// A gradient of the wrong sign makes every direction an ascent direction: the line search
/// fails twice and the run reports `LineSearchFailed`, returning the starting point.
#[test]
fn reports_line_search_failure() {
    struct Wrong;
    impl Objective for Wrong {
        fn dim(&self) -> usize {
            2
        }
        fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
            x.dot(&x)
        }
        fn value_grad(&self, x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>) -> f64 {
            g.assign(&(-2.0 * &x));
            self.value(x)
        }
    }
    let x0 = array![1.0, -2.0];
    let sol = Lbfgs::new().minimize(&Wrong, x0.view(), None).unwrap();
    assert_eq!(sol.status, Status::LineSearchFailed);
    assert_eq!(sol.iterations, 0);
    assert_eq!(sol.x, x0);
}

/// Iteration limit, observer stop and convergence at the start.
#[test]
fn stopping_rules() {
    let f = Rosenbrock(2);
    let x0 = array![-1.2, 1.0];
    let sol = Lbfgs::new()
        .max_iters(3)
        .minimize(&f, x0.view(), None)
        .unwrap();
    assert_eq!((sol.status, sol.iterations), (Status::IterationLimit, 3));
    assert!(f.value(sol.x.view()) < f.value(x0.view()));
    struct Stop;
    impl Observer for Stop {
        fn observe(&mut self, _: &IterationInfo) -> bool {
            false
        }
    }
    let sol = Lbfgs::new()
        .minimize(&f, x0.view(), Some(&mut Stop))
        .unwrap();
    assert_eq!((sol.status, sol.iterations), (Status::StoppedByObserver, 1));
    let sol = Lbfgs::new()
        .minimize(&f, array![1.0, 1.0].view(), None)
        .unwrap();
    assert_eq!((sol.status, sol.iterations), (Status::Converged, 0));
}

#[test]
fn bad_input_errors() {
    let f = Rosenbrock(2);
    let x0 = array![0.0, 0.0];
    let name = |r: Result<Solution>| match r {
        Err(Error::InvalidParameter { name, .. }) => name,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        name(Lbfgs::new().memory(0).minimize(&f, x0.view(), None)),
        "memory"
    );
    assert_eq!(
        name(Lbfgs::new().max_iters(0).minimize(&f, x0.view(), None)),
        "max_iters"
    );
    assert_eq!(
        name(
            Lbfgs::new()
                .grad_tol(f64::NAN)
                .minimize(&f, x0.view(), None)
        ),
        "grad_tol"
    );
    let bad_ls = StrongWolfe {
        c1: 0.95,
        ..StrongWolfe::default()
    };
    assert_eq!(
        name(
            Lbfgs::new()
                .with_line_search(bad_ls)
                .minimize(&f, x0.view(), None)
        ),
        "c2"
    );
    assert!(matches!(
        Lbfgs::new().minimize(&f, array![0.0].view(), None),
        Err(Error::DimensionMismatch { .. })
    ));
    assert_eq!(
        Lbfgs::new().minimize(&f, array![f64::NAN, 0.0].view(), None),
        Err(Error::NonFinite("the starting point"))
    );
}

/// Central finite differences of `f` at `x` along every coordinate, compared with the
/// analytic gradient (relative tolerance).
fn check_gradient<O: Objective>(
    f: &O,
    x: &Array1<f64>,
    rel: f64,
) -> std::result::Result<(), String> {
    let d = x.len();
    let mut g = Array1::zeros(d);
    f.value_grad(x.view(), g.view_mut());
    let v = f.value(x.view());
    for i in 0..d {
        let h = 1e-6 * x[i].abs().max(1.0);
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += h;
        xm[i] -= h;
        let fd = (f.value(xp.view()) - f.value(xm.view())) / (2.0 * h);
        let scale = g[i].abs().max(v.abs()).max(1.0);
        if (fd - g[i]).abs() > rel * scale {
            return Err(format!("coordinate {i}: analytic {} vs fd {fd}", g[i]));
        }
    }
    Ok(())
}

fn point(d: usize) -> impl Strategy<Value = Array1<f64>> {
    proptest::collection::vec(-3.0f64..3.0, d).prop_map(Array1::from)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The test objectives' gradients agree with finite differences.
    #[test]
    fn gradients_match_finite_differences(
        x in point(4),
        seed in 0u64..1000,
        lambda in 0.0f64..2.0,
    ) {
        for loss in [Loss::Squared, Loss::Logistic] {
            let p: DenseGlm = random_problem(12, 4, lambda, loss, seed);
            prop_assert!(check_gradient(&p, &x, 1e-6).is_ok(), "{:?}", check_gradient(&p, &x, 1e-6));
            // Term scalars and regulariser reproduce the full gradient.
            let mut g = Array1::zeros(4);
            p.value_grad(x.view(), g.view_mut());
            let mut sum = Array1::zeros(4);
            crate::FiniteSum::regulariser_grad(&p, x.view(), sum.view_mut());
            for i in 0..12 {
                let c = crate::GlmSum::term_scalar(&p, x.view(), i);
                crate::GlmSum::add_scaled_row(&p, i, c, sum.view_mut());
            }
            prop_assert!(norm(&(&sum - &g)) <= 1e-10 * norm(&g).max(1.0));
        }
        prop_assert!(check_gradient(&Rosenbrock(4), &x, 1e-6).is_ok());
        let q = Quadratic { m: array![[2.0, 0.5], [0.5, 1.0]], b: array![1.0, -1.0] };
        prop_assert!(check_gradient(&q, &x.iter().take(2).copied().collect::<Array1<f64>>(), 1e-6).is_ok());
    }
}

/// A quadratic that states the curvature bound `λ_max‖p‖²` and records where it is evaluated.
struct BoundedQuadratic {
    q: Quadratic,
    lambda_max: f64,
    points: std::cell::RefCell<Vec<Array1<f64>>>,
}

impl Objective for BoundedQuadratic {
    fn dim(&self) -> usize {
        self.q.dim()
    }
    fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
        self.q.value(x)
    }
    fn value_grad(&self, x: ArrayView1<'_, f64>, g: ArrayViewMut1<'_, f64>) -> f64 {
        self.points.borrow_mut().push(x.to_owned());
        self.q.value_grad(x, g)
    }
    fn curvature_bound(&self, p: ArrayView1<'_, f64>) -> Option<f64> {
        Some(self.lambda_max * p.dot(&p))
    }
}

/// With a curvature bound, the first trial step is the majoriser's minimiser along `−g`:
/// `x₀ − g/λ_max` for `f = ½xᵀMx − bᵀx` (a steepest-descent direction has
/// `−gᵀp/(λ_max‖p‖²) = 1/λ_max`), and the run still converges to `M⁻¹b`.
#[test]
fn first_step_minimises_the_stated_majoriser() {
    let d = 12;
    let diag = Array1::from_shape_fn(d, |i| 1.0 + 9.0 * i as f64);
    let b = Array1::from_shape_fn(d, |i| (i as f64 + 0.5).cos());
    let f = BoundedQuadratic {
        q: Quadratic {
            m: Array2::from_diag(&diag),
            b: b.clone(),
        },
        lambda_max: diag[d - 1],
        points: Default::default(),
    };
    let x0 = Array1::from_elem(d, 0.3);
    let sol = Lbfgs::new()
        .grad_tol(1e-10)
        .minimize(&f, x0.view(), None)
        .unwrap();
    let points = f.points.borrow();
    let g0 = &diag * &x0 - &b;
    let expected = &x0 - &(&g0 / diag[d - 1]);
    assert!(norm(&(&points[0] - &x0)) == 0.0);
    assert!(norm(&(&points[1] - &expected)) <= 1e-12 * norm(&expected));
    let exact = &b / &diag;
    assert!(norm(&(&sol.x - &exact)) <= 1e-8, "{:?}", sol.x);
}
