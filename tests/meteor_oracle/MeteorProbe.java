// Test-only probe of METEOR 1.5's stages, run against pycocoevalcap's meteor-1.5.jar (the oracle).
// Compiled at test time with javac; never shipped. One request line in, one reply line out:
//   NORM <tab> text            -> the scorer's -norm text (normalized, punctuation kept, lower-cased)
//   STEM <tab> word            -> the jar's English Snowball stem
//   SYN <tab> word             -> sorted synset ids of the word and of its WordNet base forms
//   ALIGN <tab> test <tab> ref -> the best alignment's matches (refStart:len testStart:len module, ...),
//                                 a tab, then the pair's statistics line (as SCORE prints it)
import edu.cmu.meteor.aligner.Match;
import edu.cmu.meteor.aligner.Stemmer;
import edu.cmu.meteor.aligner.SynonymDictionary;
import edu.cmu.meteor.scorer.MeteorConfiguration;
import edu.cmu.meteor.scorer.MeteorScorer;
import edu.cmu.meteor.scorer.MeteorStats;
import edu.cmu.meteor.util.Constants;
import edu.cmu.meteor.util.Normalizer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.Properties;
import java.util.TreeSet;

public class MeteorProbe {
    public static void main(String[] args) throws Exception {
        boolean withScorer = args.length > 0 && args[0].equals("align");
        MeteorScorer scorer = null;
        if (withScorer) {
            Properties props = new Properties();
            props.setProperty("language", "en");
            props.setProperty("norm", "true");
            scorer = new MeteorScorer(new MeteorConfiguration(props));
        }
        Stemmer stemmer = Constants.newStemmer("english");
        String syn = Constants.DEFAULT_SYN_DIR_URL.toString();
        SynonymDictionary synonyms = new SynonymDictionary(new URL(syn + "/english.exceptions"),
                new URL(syn + "/english.synsets"), new URL(syn + "/english.relations"));
        int en = Constants.getLanguageID("english");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] part = line.split("\t", -1);
            StringBuilder sb = new StringBuilder();
            if (part[0].equals("NORM")) {
                sb.append(Normalizer.normalizeLine(part[1], en, true).toLowerCase());
            } else if (part[0].equals("STEM")) {
                sb.append(stemmer.stem(part[1]));
            } else if (part[0].equals("SYN")) {
                TreeSet<Integer> sets = new TreeSet<Integer>(synonyms.getSynSets(part[1]));
                sets.addAll(synonyms.getStemSynSets(part[1]));
                for (int s : sets) sb.append(s).append(' ');
            } else if (part[0].equals("ALIGN") && scorer != null) {
                MeteorStats stats = scorer.getMeteorStats(part[1], part[2]);
                for (Match m : stats.alignment.matches)
                    if (m != null)
                        sb.append(m.start).append(':').append(m.length).append(' ').append(m.matchStart)
                          .append(':').append(m.matchLength).append(' ').append(m.module).append(',');
                sb.append('\t').append(stats.toString());
            } else {
                sb.append("ERROR unknown request");
            }
            out.println(sb.toString().trim());
        }
    }
}
