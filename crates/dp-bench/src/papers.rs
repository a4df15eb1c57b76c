//! The papers the experiments reproduce, by the number used in experiment ids and in
//! [`Experiment::paper`](crate::Experiment::paper) (`000`–`004`).

/// One reproduced paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paper {
    /// The three-digit number that starts experiment ids and `paper()` labels.
    pub number: &'static str,
    /// The authors, as on the paper.
    pub authors: &'static str,
    /// First author and year, as the index cites it next to an experiment.
    pub short: &'static str,
    /// The exact title.
    pub title: &'static str,
    /// Where it appeared.
    pub venue: &'static str,
}

/// Every reproduced paper, by number. Titles and authors as printed on the papers (the
/// lecture notes name their author and scribe).
pub const PAPERS: [Paper; 5] = [
    Paper {
        number: "000",
        authors: "Shuang Song, Thomas Steinke, Om Thakkar, Abhradeep Thakurta",
        short: "Song et al. 2021",
        title: "Evading the Curse of Dimensionality in Unconstrained Private GLMs",
        venue: "AISTATS 2021",
    },
    Paper {
        number: "001",
        authors: "Rachel Redberg, Antti Koskela, Yu-Xiang Wang",
        short: "Redberg et al. 2023",
        title: "Improving the Privacy and Practicality of Objective Perturbation for \
                Differentially Private Linear Learners",
        venue: "NeurIPS 2023",
    },
    Paper {
        number: "002",
        authors: "Prateek Varshney, Abhradeep Thakurta, Prateek Jain",
        short: "Varshney et al. 2022",
        title: "(Nearly) Optimal Private Linear Regression for Sub-Gaussian Data via Adaptive \
                Clipping",
        venue: "COLT 2022",
    },
    Paper {
        number: "003",
        authors: "Raman Arora, Raef Bassily, Cristóbal Guzmán, Michael Menart, Enayat Ullah",
        short: "Arora et al. 2022",
        title: "Differentially Private Generalized Linear Models Revisited",
        venue: "NeurIPS 2022",
    },
    Paper {
        number: "004",
        authors: "Aleksandar Nikolov (scribe: Patricia Thaine)",
        short: "Nikolov, lecture notes",
        title: "Lecture 9: Differentially Private Empirical Risk Minimization",
        venue: "lecture notes",
    },
];

/// The paper a `paper()` label such as `"001 Table 2"` refers to (by its leading number).
pub fn paper_of(label: &str) -> Option<&'static Paper> {
    let number = label.get(..3)?;
    PAPERS.iter().find(|p| p.number == number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_find_their_paper() {
        assert_eq!(
            paper_of("001 Table 2").map(|p| p.short),
            Some("Redberg et al. 2023")
        );
        assert_eq!(
            paper_of("004 (noisy projected GD)").map(|p| p.number),
            Some("004")
        );
        assert!(paper_of("005 Fig. 1").is_none());
        assert!(paper_of("").is_none());
        assert!(PAPERS.windows(2).all(|w| w[0].number < w[1].number));
    }
}
